from ranking import top_scores


def test_top_two():
    assert top_scores([3, 9, 1, 7], 2) == [9, 7]
