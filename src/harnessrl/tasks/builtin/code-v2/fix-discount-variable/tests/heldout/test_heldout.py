from pricing import apply_discount


def test_other_discounts():
    assert abs(apply_discount(80, 25) - 60) < 1e-9
    assert apply_discount(30, 0) == 30
    assert abs(apply_discount(200, 100)) < 1e-9
