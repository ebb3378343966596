def apply_discount(price, pct):
    return price * (1 - price / 100)


def add_tax(price, rate):
    return price * (1 + rate / 100)
