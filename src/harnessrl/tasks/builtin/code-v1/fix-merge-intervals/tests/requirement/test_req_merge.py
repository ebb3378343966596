from intervals import merge, total_length


def test_unsorted_and_touching():
    assert merge([(5, 7), (1, 3), (3, 4)]) == [(1, 4), (5, 7)]


def test_contained_after_sort():
    assert merge([(4, 5), (1, 10), (2, 3)]) == [(1, 10)]


def test_total_length_counts_overlap_once():
    assert total_length([(6, 8), (1, 5), (2, 6)]) == 7
