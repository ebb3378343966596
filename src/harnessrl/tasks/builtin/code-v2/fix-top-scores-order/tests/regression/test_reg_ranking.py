from ranking import bottom_scores


def test_bottom():
    assert bottom_scores([3, 9, 1, 7], 2) == [1, 3]
