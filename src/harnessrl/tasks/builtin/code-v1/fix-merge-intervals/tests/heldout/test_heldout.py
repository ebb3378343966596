from intervals import merge, total_length


def test_other_merges():
    assert merge([(10, 12), (0, 2), (11, 15), (2, 3)]) == [(0, 3), (10, 15)]
    assert merge([(3, 4)]) == [(3, 4)]
    assert total_length([(0, 4), (1, 2), (10, 11)]) == 5
