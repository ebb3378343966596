def doubles(xs):
    return [2 * x for x in xs]
