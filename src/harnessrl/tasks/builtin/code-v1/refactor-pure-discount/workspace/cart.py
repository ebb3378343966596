def apply_discount(cart, percent):
    for item in cart["items"]:
        item["price"] = round(item["price"] * (100 - percent) / 100, 2)
    cart["discount"] = percent
    return cart


def total(cart):
    return round(sum(i["price"] * i["qty"] for i in cart["items"]), 2)
