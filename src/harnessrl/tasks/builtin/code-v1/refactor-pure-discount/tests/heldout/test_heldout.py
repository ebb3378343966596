import copy

from cart import apply_discount


def test_other_carts_untouched():
    cart = {"items": [{"name": "cup", "price": 4.0, "qty": 1}, {"name": "tea", "price": 10.0, "qty": 2}]}
    before = copy.deepcopy(cart)
    out = apply_discount(cart, 25)
    assert cart == before and out is not cart
    assert all(a is not b for a, b in zip(out["items"], cart["items"]))
