import pytest

import shapes as m


def test_vector_add():
    assert m.Vector(1, 2).add(m.Vector(3, -5)) == m.Vector(4, -3)
    assert m.Vector(0, 0).add(m.Vector(2, 2)) == m.Vector(2, 2)


def test_vector_scale():
    assert m.Vector(1, -2).scale(3) == m.Vector(3, -6)
    assert m.Vector(4, 5).scale(0) == m.Vector(0, 0)


def test_vector_dot():
    assert m.Vector(1, 2).dot(m.Vector(3, 4)) == 11
    assert m.Vector(1, 0).dot(m.Vector(0, 1)) == 0
    assert m.Vector(2, 3).dot(m.Vector(-1, 5)) == 13


def test_vector_length():
    assert m.Vector(3, 4).length() == 5
    assert m.Vector(0, 0).length() == 0
    assert m.Vector(-6, 8).length() == 10


def test_rect_area_and_perimeter():
    r = m.Rect(0, 0, 3, 4)
    assert r.area() == 12
    assert r.perimeter() == 14
    assert m.Rect(1, 1, 5, 1).perimeter() == 12


@pytest.mark.parametrize("point, expected", [((1, 1), True), ((0, 0), True), ((3, 4), True), ((4, 1), False), ((1, -1), False), ((2, 5), False)])
def test_rect_contains(point, expected):
    assert m.Rect(0, 0, 3, 4).contains(*point) == expected


@pytest.mark.parametrize("other, expected", [
    ((1, 1, 2, 2), True), ((3, 0, 2, 2), False), ((5, 5, 1, 1), False), ((-1, -1, 2, 2), True), ((0, 4, 1, 1), False),
])
def test_rect_intersects(other, expected):
    assert m.Rect(0, 0, 3, 4).intersects(m.Rect(*other)) == expected


@pytest.mark.parametrize("args, expected", [(((0, 0), (3, 4)), 5), (((1, 1), (1, 1)), 0), (((-1, 2), (2, 6)), 5)])
def test_distance(args, expected):
    assert m.distance(*args) == expected


@pytest.mark.parametrize("args, expected", [(((0, 0), (3, 4)), 7), (((1, 1), (1, 1)), 0), (((5, -2), (1, 3)), 9)])
def test_manhattan(args, expected):
    assert m.manhattan(*args) == expected


@pytest.mark.parametrize("args, expected", [
    ((3, 3, 3), "equilateral"), ((3, 3, 5), "isosceles"), ((5, 3, 3), "isosceles"), ((3, 4, 5), "scalene"),
    ((1, 2, 3), "invalid"), ((0, 1, 1), "invalid"), ((4, 4, 7), "isosceles"), ((2, 3, 4), "scalene"),
])
def test_triangle_kind(args, expected):
    assert m.triangle_kind(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([(0, 0), (4, 0), (4, 3), (0, 3)],), 12), (([(0, 0), (0, 3), (4, 3), (4, 0)],), 12), (([(0, 0), (2, 0), (0, 2)],), 2),
])
def test_polygon_area(args, expected):
    assert m.polygon_area(*args) == expected


@pytest.mark.parametrize("args, expected", [(([(1, 2), (3, -1), (0, 5)],), (0, -1, 3, 5)), (([(2, 2)],), (2, 2, 2, 2))])
def test_bounding_box(args, expected):
    assert m.bounding_box(*args) == expected
