from finder import largest


def test_all_negative():
    assert largest([-5, -2, -9]) == -2


def test_single_negative():
    assert largest([-1]) == -1
