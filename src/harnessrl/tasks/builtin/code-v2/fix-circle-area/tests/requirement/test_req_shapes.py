import math

from shapes import circle_area


def test_area():
    assert abs(circle_area(3) - 9 * math.pi) < 1e-9
