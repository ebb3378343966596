import dataclasses

import pytest
from points import Point


def test_other_points():
    p = Point(-3, 7)
    assert (p.x, p.y) == (-3, 7) and p == Point(-3, 7) and p != Point(7, -3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.y = 0
    assert {Point(0, 0): "o"}[Point(0, 0)] == "o"
