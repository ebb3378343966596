import math

from geometry import Circle, Rectangle, describe, total_area


def test_behaviour():
    assert total_area([Circle(1), Rectangle(2, 3)]) == math.pi + 6
    assert describe(Rectangle(2, 2)) == "Rectangle with area 4.00"
