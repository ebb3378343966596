def stock(inventory, item):
    return inventory[item]


def restock(inventory, item, n):
    inventory[item] = stock(inventory, item) + n
    return inventory
