import pytest

import listops as m


@pytest.mark.parametrize("args, expected", [
    (([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]), (([1, 2, 3], 3), [[1, 2, 3]]), (([], 4), []),
    (([1, 2, 3], 1), [[1], [2], [3]]), (([1, 2], 5), [[1, 2]]),
])
def test_chunk(args, expected):
    assert m.chunk(*args) == expected


def test_chunk_rejects_zero():
    with pytest.raises(ValueError):
        m.chunk([1], 0)


@pytest.mark.parametrize("args, expected", [
    (([1, [2, [3, [4]]], 5],), [1, 2, 3, 4, 5]), (([],), []), (([[], [1], [[2]]],), [1, 2]), ((["a", ["b"]],), ["a", "b"]),
])
def test_flatten(args, expected):
    assert m.flatten(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([3, 1, 3, 2, 1],), [3, 1, 2]), (([],), []), ((["a", "a"],), ["a"]), (([1, 2, 3],), [1, 2, 3]),
])
def test_dedupe(args, expected):
    assert m.dedupe(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([1, 2, 3, 4], 1), [2, 3, 4, 1]), (([1, 2, 3, 4], -1), [4, 1, 2, 3]), (([1, 2, 3], 3), [1, 2, 3]),
    (([1, 2, 3], 5), [3, 1, 2]), (([], 2), []),
])
def test_rotate(args, expected):
    assert m.rotate(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([1, 2, 3],), [1, 3, 6]), (([],), []), (([5, -5, 2],), [5, 0, 2]), (([0, 0],), [0, 0]),
])
def test_running_sum(args, expected):
    assert m.running_sum(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([1, 4, 9],), [3, 5]), (([5],), []), (([],), []), (([3, 1, 2],), [-2, 1]),
])
def test_pairwise_diff(args, expected):
    assert m.pairwise_diff(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([1, 3, 5], [2, 4, 6]), [1, 2, 3, 4, 5, 6]), (([1], [2, 3, 4]), [1, 2, 3, 4]), (([1, 2, 3], []), [1, 2, 3]),
    (([], []), []), ((["a", "b"], ["x"]), ["a", "x", "b"]),
])
def test_interleave(args, expected):
    assert m.interleave(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([1, 5, 3],), 1), (([7, 7, 2],), 0), (([],), None), (([-3, -1, -2],), 1), (([4],), 0), (([1, 2, 9],), 2),
])
def test_index_of_max(args, expected):
    assert m.index_of_max(*args) == expected


def test_partition():
    assert m.partition([1, 2, 3, 4, 5], lambda x: x % 2 == 0) == ([2, 4], [1, 3, 5])
    assert m.partition([], bool) == ([], [])
    assert m.partition(["a", "", "b"], bool) == (["a", "b"], [""])


@pytest.mark.parametrize("args, expected", [
    (([3, 1, 4, 1, 5],), 4), (([2, 2],), None), (([],), None), (([-1, -2],), -2), (([9, 9, 8],), 8),
])
def test_second_largest(args, expected):
    assert m.second_largest(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([1, 3, 2, 5, 4], 2), [3, 3, 5, 5]), (([1, 2, 3], 3), [3]), (([1, 2], 3), []), (([4, 1], 1), [4, 1]),
    (([1, 2], 0), []),
])
def test_window_max(args, expected):
    assert m.window_max(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([1, 4, 7], [2, 3, 8]), [1, 2, 3, 4, 7, 8]), (([], [1, 2]), [1, 2]), (([1, 2], []), [1, 2]),
    (([1, 1], [1]), [1, 1, 1]), (([5], [1, 2, 3]), [1, 2, 3, 5]),
])
def test_merge_sorted(args, expected):
    assert m.merge_sorted(*args) == expected
