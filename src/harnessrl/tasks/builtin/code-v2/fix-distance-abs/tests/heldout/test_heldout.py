from line1d import distance


def test_other_points():
    assert distance(-3, 3) == 6
    assert distance(1.5, 1.5) == 0
    assert distance(-10, -4) == 6
