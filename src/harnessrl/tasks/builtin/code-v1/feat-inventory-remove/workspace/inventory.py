class OutOfStock(Exception):
    pass


class Inventory:
    def __init__(self):
        self._counts = {}

    def add(self, item, qty=1):
        if qty < 1:
            raise ValueError("qty must be positive")
        self._counts[item] = self._counts.get(item, 0) + qty

    def count(self, item):
        return self._counts.get(item, 0)

    def items(self):
        return sorted(self._counts)
