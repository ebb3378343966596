"""Geometry with small value classes."""

import math


class Vector:
    """A 2-D vector."""

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __eq__(self, other):
        return isinstance(other, Vector) and (self.x, self.y) == (other.x, other.y)

    def __repr__(self):
        return f"Vector({self.x}, {self.y})"

    def add(self, other):
        """The sum of two vectors."""
        return Vector(self.x + other.x, self.y + other.y)

    def scale(self, k):
        """This vector times the number `k`."""
        return Vector(self.x * k, self.y * k)

    def dot(self, other):
        """The dot product."""
        return self.x * other.x + self.y * other.y

    def length(self):
        """The Euclidean length."""
        return math.hypot(self.x, self.y)


class Rect:
    """An axis-aligned rectangle from corner (x, y) with `width` and `height`."""

    def __init__(self, x, y, width, height):
        self.x, self.y, self.width, self.height = x, y, width, height

    def area(self):
        """width * height."""
        return self.width * self.height

    def contains(self, px, py):
        """True when the point lies inside or on the border."""
        return self.x <= px <= self.x + self.width and self.y <= py <= self.y + self.height

    def intersects(self, other):
        """True when the two rectangles overlap with a positive area."""
        return (self.x < other.x + other.width and other.x < self.x + self.width
                and self.y < other.y + other.height and other.y < self.y + self.height)

    def perimeter(self):
        """2 * (width + height)."""
        return 2 * (self.width + self.height)


def distance(p, q):
    """The Euclidean distance between points (x, y)."""
    return math.hypot(q[0] - p[0], q[1] - p[1])


def manhattan(p, q):
    """|dx| + |dy| between points (x, y)."""
    return abs(q[0] - p[0]) + abs(q[1] - p[1])


def triangle_kind(a, b, c):
    """"equilateral", "isosceles", "scalene", or "invalid" when the sides cannot form a triangle."""
    x, y, z = sorted((a, b, c))
    if x <= 0 or x + y <= z:
        return "invalid"
    if x == z:
        return "equilateral"
    if x == y or y == z:
        return "isosceles"
    return "scalene"


def polygon_area(points):
    """The area of a simple polygon by the shoelace formula (always non-negative)."""
    total = 0
    n = len(points)
    for i in range(n):
        x1, y1 = points[i]
        x2, y2 = points[(i + 1) % n]
        total += x1 * y2 - x2 * y1
    return abs(total) / 2


def bounding_box(points):
    """(min x, min y, max x, max y) of a non-empty list of points."""
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    return min(xs), min(ys), max(xs), max(ys)
