import itertools


class TodoList:
    def __init__(self):
        self._ids = itertools.count(1)
        self._items = {}

    def add(self, title):
        todo_id = next(self._ids)
        self._items[todo_id] = {"title": title, "done": False}
        return todo_id

    def titles(self):
        return [item["title"] for item in self._items.values()]
