import copy

from settings import deep_merge


def test_other_nesting():
    base = {"a": {"b": {"c": 1, "d": 2}}, "x": 1}
    over = {"a": {"b": {"d": 3}}, "y": 2}
    snapshot = copy.deepcopy((base, over))
    assert deep_merge(base, over) == {"a": {"b": {"c": 1, "d": 3}}, "x": 1, "y": 2}
    assert (base, over) == snapshot
