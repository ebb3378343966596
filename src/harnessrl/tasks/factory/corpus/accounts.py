"""A bank account and an inventory: classes with rules."""


class Account:
    """A balance in integer cents with a history of operations."""

    def __init__(self, owner, balance=0):
        self.owner = owner
        self.balance = balance
        self.history = []

    def deposit(self, amount):
        """Add a positive amount; ValueError for amount <= 0."""
        if amount <= 0:
            raise ValueError("deposit must be positive")
        self.balance += amount
        self.history.append(("deposit", amount))

    def withdraw(self, amount):
        """Take a positive amount out; ValueError when it exceeds the balance."""
        if amount <= 0:
            raise ValueError("withdrawal must be positive")
        if amount > self.balance:
            raise ValueError("insufficient funds")
        self.balance -= amount
        self.history.append(("withdraw", amount))

    def transfer(self, other, amount):
        """Move `amount` from this account to `other` (nothing changes if the withdrawal fails)."""
        self.withdraw(amount)
        other.deposit(amount)

    def statement(self):
        """One line per operation, "deposit 100" / "withdraw 30", then "balance N"."""
        lines = [f"{kind} {amount}" for kind, amount in self.history]
        lines.append(f"balance {self.balance}")
        return "\n".join(lines)


class Inventory:
    """Stock counts per item name, with a reorder level."""

    def __init__(self, reorder_level=2):
        self.stock = {}
        self.reorder_level = reorder_level

    def add(self, name, qty):
        """Receive `qty` units of `name`."""
        self.stock[name] = self.stock.get(name, 0) + qty

    def take(self, name, qty):
        """Ship `qty` units; returns False (and ships nothing) when there are not enough."""
        have = self.stock.get(name, 0)
        if qty > have:
            return False
        self.stock[name] = have - qty
        return True

    def to_reorder(self):
        """Sorted names whose stock is at or below the reorder level."""
        return sorted(n for n, q in self.stock.items() if q <= self.reorder_level)

    def total_units(self):
        """All units of all items."""
        return sum(self.stock.values())
