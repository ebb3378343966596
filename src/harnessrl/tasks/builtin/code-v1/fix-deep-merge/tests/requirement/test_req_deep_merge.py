import copy

from settings import DEFAULTS, deep_merge, load


def test_nested_keys_are_merged():
    assert deep_merge({"db": {"host": "a", "port": 1}}, {"db": {"port": 2}}) == {"db": {"host": "a", "port": 2}}


def test_inputs_not_mutated():
    base = {"a": {"b": 1}}
    over = {"a": {"c": 2}}
    snapshot = copy.deepcopy((base, over))
    deep_merge(base, over)
    assert (base, over) == snapshot


def test_defaults_survive_load():
    before = copy.deepcopy(DEFAULTS)
    assert load({"db": {"port": 6000}})["db"] == {"host": "localhost", "port": 6000}
    assert DEFAULTS == before
