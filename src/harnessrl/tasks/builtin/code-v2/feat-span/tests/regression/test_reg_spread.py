from spread import biggest, smallest


def test_min_max():
    assert smallest([3, 10, 4]) == 3
    assert biggest([3, 10, 4]) == 10
