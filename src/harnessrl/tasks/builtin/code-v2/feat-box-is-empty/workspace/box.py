class Box:
    def __init__(self):
        self.items = []

    def put(self, item):
        self.items.append(item)

    def size(self):
        return len(self.items)
