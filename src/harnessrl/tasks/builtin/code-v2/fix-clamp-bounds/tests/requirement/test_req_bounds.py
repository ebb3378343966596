from bounds import clamp


def test_inside():
    assert clamp(5, 0, 10) == 5


def test_below_and_above():
    assert clamp(-3, 0, 10) == 0
    assert clamp(42, 0, 10) == 10
