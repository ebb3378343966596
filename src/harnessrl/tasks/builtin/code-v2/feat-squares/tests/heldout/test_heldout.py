from listmath import squares


def test_other_lists():
    assert squares([-3, 0.5]) == [9, 0.25]
    assert squares([]) == []
