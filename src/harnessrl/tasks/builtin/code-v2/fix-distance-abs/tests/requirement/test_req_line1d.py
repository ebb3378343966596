from line1d import distance


def test_both_orders():
    assert distance(2, 7) == 5
    assert distance(7, 2) == 5
