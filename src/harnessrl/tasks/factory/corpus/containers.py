"""Small container classes."""


class Stack:
    """Last in, first out."""

    def __init__(self):
        self.items = []

    def push(self, item):
        """Put `item` on top."""
        self.items.append(item)

    def pop(self):
        """Remove and return the top item; IndexError when empty."""
        if not self.items:
            raise IndexError("pop from an empty stack")
        return self.items.pop()

    def peek(self):
        """The top item without removing it; None when empty."""
        if not self.items:
            return None
        return self.items[-1]

    def size(self):
        """How many items the stack holds."""
        return len(self.items)


class BoundedQueue:
    """First in, first out, holding at most `capacity` items: a full queue drops its oldest item."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.items = []

    def put(self, item):
        """Add `item` at the back, dropping the front item if the queue is full; returns the dropped item or None."""
        dropped = None
        if len(self.items) >= self.capacity:
            dropped = self.items.pop(0)
        self.items.append(item)
        return dropped

    def get(self):
        """Remove and return the front item; None when empty."""
        if not self.items:
            return None
        return self.items.pop(0)

    def is_full(self):
        """True when the queue holds `capacity` items."""
        return len(self.items) == self.capacity


class Counter:
    """Counts of hashable things."""

    def __init__(self):
        self.counts = {}

    def add(self, key, n=1):
        """Count `key` `n` more times."""
        self.counts[key] = self.counts.get(key, 0) + n

    def remove(self, key, n=1):
        """Count `key` `n` fewer times; a count that reaches 0 or below is deleted."""
        left = self.counts.get(key, 0) - n
        if left > 0:
            self.counts[key] = left
        else:
            self.counts.pop(key, None)

    def most_common(self, n):
        """The `n` most common (key, count) pairs, most common first, ties by key."""
        return sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def total(self):
        """The sum of all counts."""
        return sum(self.counts.values())


class LRUCache:
    """A mapping of at most `capacity` keys that forgets the least recently used one."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.data = {}
        self.order = []

    def get(self, key, default=None):
        """The value of `key` (marking it recently used), or `default`."""
        if key not in self.data:
            return default
        self.order.remove(key)
        self.order.append(key)
        return self.data[key]

    def put(self, key, value):
        """Store `value` under `key`, evicting the least recently used key when over capacity."""
        if key in self.data:
            self.order.remove(key)
        self.data[key] = value
        self.order.append(key)
        if len(self.order) > self.capacity:
            oldest = self.order.pop(0)
            del self.data[oldest]
