from ranking import top_scores


def test_other_inputs():
    assert top_scores([5, 5, 2], 1) == [5]
    assert top_scores([1, 2, 3], 5) == [3, 2, 1]
    assert top_scores([-1, -8, 4, 0], 3) == [4, 0, -1]
