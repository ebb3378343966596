import math


def circumference(r):
    return 2 * math.pi * r


def circle_area(r):
    return math.pi * r * 2
