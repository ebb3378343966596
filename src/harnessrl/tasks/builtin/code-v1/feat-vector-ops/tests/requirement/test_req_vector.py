import pytest
from vector import Vector2


def test_sub_and_scale():
    assert Vector2(5, 7) - Vector2(1, 2) == Vector2(4, 5)
    assert Vector2(1, -2) * 3 == Vector2(3, -6)
    assert 3 * Vector2(1, -2) == Vector2(3, -6)


def test_dot_and_norm():
    assert Vector2(1, 2).dot(Vector2(3, 4)) == 11
    assert Vector2(3, 4).norm() == pytest.approx(5.0)
