from percent import percent


def test_half():
    assert percent(1, 2) == 50


def test_quarter():
    assert percent(25, 100) == 25
