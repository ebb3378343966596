def calcTotal(prices, tax_rate=0.0):
    subtotal = sum(prices)
    return round(subtotal * (1 + tax_rate), 2)


def receipt(prices, tax_rate=0.0):
    total = calcTotal(prices, tax_rate)
    return f"{len(prices)} items, total {total:.2f}"
