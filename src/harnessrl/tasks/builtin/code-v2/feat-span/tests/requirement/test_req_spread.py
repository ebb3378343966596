from spread import span


def test_span():
    assert span([3, 10, 4]) == 7
