from spread import span


def test_other_lists():
    assert span([5]) == 0
    assert span([-2, 2]) == 4
    assert span([1.5, 0.5, 1.0]) == 1.0
