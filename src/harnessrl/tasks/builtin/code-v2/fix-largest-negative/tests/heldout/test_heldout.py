from finder import largest


def test_more_negatives():
    assert largest([-100, -50, -75]) == -50
    assert largest([-0.5, -0.25]) == -0.25
