import pytest
from vector import Vector2


def test_other_sub_and_scale():
    assert Vector2(0, 0) - Vector2(2, -3) == Vector2(-2, 3)
    assert Vector2(2, 5) * 0 == Vector2(0, 0)
    assert -1 * Vector2(4, -4) == Vector2(-4, 4)


def test_other_dot_and_norm():
    assert Vector2(2, -1).dot(Vector2(1, 2)) == 0
    assert Vector2(-6, 8).norm() == pytest.approx(10.0)
