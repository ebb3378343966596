import pytest
from shop.checkout import checkout, subtotal


def test_subtotal_and_default_region():
    cart = {"lines": [(2.0, 2), (1.5, 1)]}
    assert subtotal(cart) == 5.5
    assert checkout(cart) == pytest.approx(6.05)
