import pytest

import intervals as m


@pytest.mark.parametrize("args, expected", [
    (((1, 3), (3, 5)), True), (((1, 3), (4, 5)), False), (((4, 9), (1, 5)), True), (((1, 10), (3, 4)), True), (((5, 6), (1, 2)), False),
])
def test_overlaps(args, expected):
    assert m.overlaps(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([(1, 3), (2, 5), (7, 8)],), [(1, 5), (7, 8)]), (([(5, 6), (1, 2)],), [(1, 2), (5, 6)]), (([(1, 2), (3, 4)],), [(1, 4)]),
    (([],), []), (([(1, 10), (2, 3)],), [(1, 10)]),
])
def test_merge_intervals(args, expected):
    assert m.merge_intervals(*args) == expected


@pytest.mark.parametrize("args, expected", [(([(1, 3), (2, 5)],), 5), (([(1, 1)],), 1), (([],), 0), (([(1, 2), (10, 12)],), 5)])
def test_total_length(args, expected):
    assert m.total_length(*args) == expected


@pytest.mark.parametrize("args, expected", [(((1, 5), (3, 9)), (3, 5)), (((1, 2), (3, 4)), None), (((2, 2), (2, 8)), (2, 2)), (((0, 9), (3, 4)), (3, 4))])
def test_intersection(args, expected):
    assert m.intersection(*args) == expected


@pytest.mark.parametrize("args, expected", [(([(1, 3), (7, 9)], 8), True), (([(1, 3)], 4), False), (([(1, 3)], 3), True), (([], 1), False), (([(1, 3)], 1), True)])
def test_contains_point(args, expected):
    assert m.contains_point(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([(3, 4), (7, 8)], 1, 10), [(1, 2), (5, 6), (9, 10)]), (([], 1, 3), [(1, 3)]), (([(0, 20)], 1, 10), []),
    (([(1, 5)], 1, 7), [(6, 7)]), (([(12, 15)], 1, 10), [(1, 10)]),
])
def test_gaps(args, expected):
    assert m.gaps(*args) == expected


@pytest.mark.parametrize("args, expected", [(((1, 10), 4), [(1, 4), (5, 8), (9, 10)]), (((1, 3), 3), [(1, 3)]), (((5, 5), 2), [(5, 5)]), (((1, 4), 1), [(1, 1), (2, 2), (3, 3), (4, 4)])])
def test_split_interval(args, expected):
    assert m.split_interval(*args) == expected


@pytest.mark.parametrize("args, expected", [(([(1, 5), (2, 6), (4, 8)],), 3), (([(1, 2), (3, 4)],), 1), (([],), 0), (([(1, 3), (3, 5)],), 2)])
def test_max_overlap(args, expected):
    assert m.max_overlap(*args) == expected


@pytest.mark.parametrize("args, expected", [(((1, 3), 2), (3, 5)), (((0, 0), -1), (-1, -1))])
def test_shift(args, expected):
    assert m.shift(*args) == expected
