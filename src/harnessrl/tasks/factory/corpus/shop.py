"""A shopping cart with prices in integer cents."""

TAX_RATE_PERCENT = 20


class Cart:
    """Line items (name -> [unit price, quantity]) and an optional discount code."""

    def __init__(self):
        self.lines = {}
        self.code = None

    def add(self, name, price, qty=1):
        """Add `qty` units at `price`; adding a known item raises its quantity (its price stays)."""
        if qty <= 0:
            raise ValueError("quantity must be positive")
        if name in self.lines:
            self.lines[name][1] += qty
        else:
            self.lines[name] = [price, qty]

    def remove(self, name, qty=1):
        """Remove `qty` units; the line goes when none are left; KeyError for an unknown item."""
        line = self.lines[name]
        line[1] -= qty
        if line[1] <= 0:
            del self.lines[name]

    def subtotal(self):
        """The sum of price * quantity."""
        return sum(price * qty for price, qty in self.lines.values())

    def apply_code(self, code):
        """Accept "SAVE10" (10% off) or "HALF" (50% off); False for any other code."""
        if code not in ("SAVE10", "HALF"):
            return False
        self.code = code
        return True

    def discount(self):
        """The discount in cents from the applied code (rounded down)."""
        if self.code == "SAVE10":
            return self.subtotal() * 10 // 100
        if self.code == "HALF":
            return self.subtotal() // 2
        return 0

    def total(self):
        """(subtotal - discount) plus tax at TAX_RATE_PERCENT, rounded down."""
        net = self.subtotal() - self.discount()
        return net + net * TAX_RATE_PERCENT // 100

    def item_count(self):
        """All units in the cart."""
        return sum(qty for _, qty in self.lines.values())


def price_per_unit(price, qty):
    """Price per unit in cents, rounded half up; ValueError for qty <= 0."""
    if qty <= 0:
        raise ValueError("qty must be positive")
    return (2 * price + qty) // (2 * qty)


def bulk_price(unit_price, qty):
    """10% off the units beyond the first 10, 20% off those beyond 100 (cents, rounded down)."""
    total = 0
    for i in range(1, qty + 1):
        if i > 100:
            total += unit_price * 80 // 100
        elif i > 10:
            total += unit_price * 90 // 100
        else:
            total += unit_price
    return total
