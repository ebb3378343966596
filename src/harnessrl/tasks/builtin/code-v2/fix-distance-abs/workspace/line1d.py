def distance(a, b):
    return a - b


def midpoint(a, b):
    return (a + b) / 2
