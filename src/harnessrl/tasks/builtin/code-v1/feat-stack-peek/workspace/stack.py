class Stack:
    def __init__(self, items=()):
        self._items = list(items)

    def push(self, item):
        self._items.append(item)

    def pop(self):
        if not self._items:
            raise IndexError("pop from empty stack")
        return self._items.pop()
