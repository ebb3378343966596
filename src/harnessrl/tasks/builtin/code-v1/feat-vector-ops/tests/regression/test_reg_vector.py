from vector import Vector2


def test_add_eq_repr():
    assert Vector2(1, 2) + Vector2(3, 4) == Vector2(4, 6)
    assert Vector2(1, 2) != (1, 2)
    assert repr(Vector2(1, 2)) == "Vector2(1, 2)"
