from parity import is_odd


def test_is_odd():
    assert is_odd(3) and is_odd(-1)
    assert not is_odd(8)
