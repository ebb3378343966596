from bounds import in_bounds


def test_in_bounds():
    assert in_bounds(3, 1, 5)
    assert not in_bounds(6, 1, 5)
