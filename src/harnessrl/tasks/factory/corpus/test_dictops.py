import pytest

import dictops as m


@pytest.mark.parametrize("args, expected", [(({"a": 1, "b": 2},), {1: "a", 2: "b"}), (({},), {}), (({"x": "y"},), {"y": "x"})])
def test_invert(args, expected):
    assert m.invert(*args) == expected


def test_group_by():
    assert m.group_by(["apple", "bob", "avocado", "cat"], lambda s: s[0]) == {"a": ["apple", "avocado"], "b": ["bob"], "c": ["cat"]}
    assert m.group_by([], len) == {}
    assert m.group_by([1, 2, 3, 4], lambda n: n % 2) == {1: [1, 3], 0: [2, 4]}


def test_count_by():
    assert m.count_by(["a", "bb", "cc", "d"], len) == {1: 2, 2: 2}
    assert m.count_by([], len) == {}
    assert m.count_by([3, 4, 5], lambda n: n > 3) == {False: 1, True: 2}


@pytest.mark.parametrize("args, expected", [
    (({"a": 1}, {"a": 2, "b": 3}), {"a": 3, "b": 3}), (({}, {"x": 1}), {"x": 1}), (({"x": 1}, {}), {"x": 1}),
    (({"a": 5, "b": 1}, {"b": 1}), {"a": 5, "b": 2}),
])
def test_merge_with_sum(args, expected):
    assert m.merge_with_sum(*args) == expected


def test_merge_with_sum_leaves_inputs():
    a = {"k": 1}
    m.merge_with_sum(a, {"k": 2})
    assert a == {"k": 1}


@pytest.mark.parametrize("args, expected", [
    (({"a": {"b": {"c": 1}}}, "a.b.c"), 1), (({"a": {"b": 2}}, "a.x"), None), (({"a": 1}, "a.b", "d"), "d"),
    (({"a": {"b": 2}}, "a"), {"b": 2}), (({}, "z", 0), 0),
])
def test_deep_get(args, expected):
    assert m.deep_get(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (({"a": {"b": 1, "c": {"d": 2}}, "e": 3},), {"a.b": 1, "a.c.d": 2, "e": 3}), (({},), {}),
    (({"a": {}},), {"a": {}}), (({"x": {"y": 1}}, "p"), {"p.x.y": 1}),
])
def test_flatten_dict(args, expected):
    assert m.flatten_dict(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (({"a": 1, "b": 2, "c": 3}, ["a", "c"]), {"a": 1, "c": 3}), (({"a": 1}, ["z"]), {}), (({}, []), {}),
])
def test_pick(args, expected):
    assert m.pick(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (({"a": 1, "b": 2, "c": 3}, ["a", "c"]), {"b": 2}), (({"a": 1}, ["z"]), {"a": 1}), (({}, ["a"]), {}),
])
def test_omit(args, expected):
    assert m.omit(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (({"a": 3, "b": 5, "c": 1}, 2), ["b", "a"]), (({"a": 2, "b": 2, "c": 1}, 2), ["a", "b"]), (({"a": 1}, 3), ["a"]),
    (({}, 1), []), (({"x": 1, "y": 9}, 1), ["y"]),
])
def test_top_keys(args, expected):
    assert m.top_keys(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (({"a": 1, "b": 2}, {"b": 3, "c": 4}), (["c"], ["a"], ["b"])), (({}, {}), ([], [], [])),
    (({"a": 1}, {"a": 1}), ([], [], [])), (({"b": 1, "a": 1}, {}), ([], ["a", "b"], [])),
])
def test_diff_keys(args, expected):
    assert m.diff_keys(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (({"a": 1}, {"a": 0, "b": 2}), {"a": 1, "b": 2}), (({}, {"x": 1}), {"x": 1}), (({"y": 1}, {}), {"y": 1}),
])
def test_default_fill(args, expected):
    assert m.default_fill(*args) == expected
