from cart import apply_discount, total


def test_discounted_values():
    cart = {"items": [{"name": "pen", "price": 2.0, "qty": 3}, {"name": "ink", "price": 9.99, "qty": 1}]}
    out = apply_discount(cart, 10)
    assert out["discount"] == 10
    assert [i["price"] for i in out["items"]] == [1.8, 8.99]
    assert total(out) == 14.39
