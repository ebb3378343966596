import math

from shapes import circumference


def test_circumference():
    assert abs(circumference(1) - 2 * math.pi) < 1e-9
