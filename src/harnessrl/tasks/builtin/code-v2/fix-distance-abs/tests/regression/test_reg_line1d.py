from line1d import midpoint


def test_midpoint():
    assert midpoint(2, 4) == 3
