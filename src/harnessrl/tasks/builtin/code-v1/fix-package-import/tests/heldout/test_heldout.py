import pytest
from shop.checkout import checkout


def test_other_carts():
    cart = {"region": "EU", "lines": [(0.105, 7), (2.5, 2)]}
    assert checkout(cart) == pytest.approx(round((0.735 + 5.0) * 1.20, 2))
    other = {"region": "Moon", "lines": [(1.111, 9)]}
    assert checkout(other) == pytest.approx(round(9.999 * 1.10, 2))
