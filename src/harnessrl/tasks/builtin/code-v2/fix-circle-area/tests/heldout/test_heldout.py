import math

from shapes import circle_area


def test_other_radii():
    assert abs(circle_area(1) - math.pi) < 1e-9
    assert abs(circle_area(0.5) - math.pi / 4) < 1e-9
    assert circle_area(0) == 0
