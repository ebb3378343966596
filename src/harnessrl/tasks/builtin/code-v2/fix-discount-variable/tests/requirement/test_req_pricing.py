from pricing import apply_discount


def test_ten_percent():
    assert abs(apply_discount(50, 10) - 45) < 1e-9
