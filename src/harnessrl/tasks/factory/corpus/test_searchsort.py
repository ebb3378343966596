import pytest

import searchsort as m

ITEMS = [1, 3, 5, 7, 9, 11]


@pytest.mark.parametrize("args, expected", [
    ((ITEMS, 7), 3), ((ITEMS, 1), 0), ((ITEMS, 11), 5), ((ITEMS, 4), -1), (([], 3), -1), ((ITEMS, 12), -1), (([5], 5), 0),
])
def test_binary_search(args, expected):
    assert m.binary_search(*args) == expected


@pytest.mark.parametrize("args, expected", [
    ((ITEMS, 4), 2), ((ITEMS, 5), 2), ((ITEMS, 0), 0), ((ITEMS, 12), 6), (([], 1), 0), (([2, 2, 2], 2), 0),
])
def test_lower_bound(args, expected):
    assert m.lower_bound(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([3, 1, 2],), [1, 2, 3]), (([],), []), (([5, 5, 1],), [1, 5, 5]), (([1, 2, 3],), [1, 2, 3]), (([9, 7, 5, 3],), [3, 5, 7, 9]),
])
def test_insertion_sort(args, expected):
    assert m.insertion_sort(*args) == expected


@pytest.mark.parametrize("args, expected", [(([1, 2, 3],), 0), (([2, 1, 3],), 1), (([3, 2, 1],), 2), (([],), 0), (([4, 1, 2, 3],), 1)])
def test_bubble_sort_passes(args, expected):
    assert m.bubble_sort_passes(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([1, 2, 2, 3],), True), (([2, 1],), False), (([],), True), (([3, 2, 2], True), True), (([1, 2], True), False),
])
def test_is_sorted(args, expected):
    assert m.is_sorted(*args) == expected


@pytest.mark.parametrize("args, expected", [(([5, 1, 4], 1), 1), (([5, 1, 4], 3), 5), (([2, 2, 1], 2), 2)])
def test_kth_smallest(args, expected):
    assert m.kth_smallest(*args) == expected


@pytest.mark.parametrize("k", [0, 4])
def test_kth_smallest_out_of_range(k):
    with pytest.raises(IndexError):
        m.kth_smallest([1, 2, 3], k)


@pytest.mark.parametrize("args, expected", [(([1, 2, 3],), 0), (([3, 2, 1],), 3), (([2, 4, 1, 3, 5],), 3), (([],), 0), (([1, 1],), 0)])
def test_count_inversions(args, expected):
    assert m.count_inversions(*args) == expected


@pytest.mark.parametrize("args, expected", [(([1, 3, 2],), 1), (([5, 1],), 0), (([1, 2, 3],), 2), (([],), None), (([2, 2],), 0), (([1, 0, 4, 3],), 0)])
def test_find_peak(args, expected):
    assert m.find_peak(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([2, 7, 11, 15], 9), (0, 1)), (([3, 2, 4], 6), (1, 2)), (([1, 2], 7), None), (([3, 3], 6), (0, 1)), (([], 1), None),
])
def test_two_sum(args, expected):
    assert m.two_sum(*args) == expected


@pytest.mark.parametrize("args, expected", [((["ccc", "a", "bb", "ab"],), ["a", "ab", "bb", "ccc"]), (([],), [])])
def test_sort_by_length(args, expected):
    assert m.sort_by_length(*args) == expected
