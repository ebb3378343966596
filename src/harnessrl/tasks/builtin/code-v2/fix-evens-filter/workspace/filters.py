def evens(xs):
    return [x for x in xs if x % 2]


def positives(xs):
    return [x for x in xs if x > 0]
