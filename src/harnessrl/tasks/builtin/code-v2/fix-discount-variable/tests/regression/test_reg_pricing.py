from pricing import add_tax


def test_tax():
    assert abs(add_tax(100, 20) - 120) < 1e-9
