from shop.tax import rate_for


def subtotal(cart_items):
    return sum(price * qty for price, qty in cart_items["lines"])


def checkout(cart_items):
    net = round(subtotal(cart_items), 2)
    return net + net * rate_for(cart_items.get("region", ""))
