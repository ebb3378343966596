from calc import add, subtract


def test_add_subtract():
    assert add(2, 3) == 5
    assert subtract(2, 3) == -1
