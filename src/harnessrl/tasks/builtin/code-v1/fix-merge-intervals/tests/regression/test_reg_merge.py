from intervals import merge


def test_sorted_overlapping():
    assert merge([(1, 4), (2, 6), (8, 9)]) == [(1, 6), (8, 9)]


def test_disjoint_and_empty():
    assert merge([(1, 2), (4, 5)]) == [(1, 2), (4, 5)]
    assert merge([]) == []
