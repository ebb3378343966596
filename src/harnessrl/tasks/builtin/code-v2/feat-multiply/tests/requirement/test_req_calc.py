from calc import multiply


def test_multiply():
    assert multiply(6, 7) == 42
