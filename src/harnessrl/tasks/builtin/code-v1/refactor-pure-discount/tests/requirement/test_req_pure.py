import copy

from cart import apply_discount


def test_input_untouched():
    cart = {"items": [{"name": "pen", "price": 2.0, "qty": 3}]}
    before = copy.deepcopy(cart)
    out = apply_discount(cart, 50)
    assert cart == before
    assert out is not cart and out["items"][0] is not cart["items"][0]
