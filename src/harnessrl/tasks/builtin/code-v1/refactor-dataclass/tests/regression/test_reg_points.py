from points import Point


def test_equality_repr_distance():
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(2, 1)
    assert repr(Point(1, 2)) == "Point(x=1, y=2)"
    assert Point(0, 0).distance_to(Point(3, 4)) == 5.0
