def minmax(values):
    if not values:
        raise ValueError("no values")
    return min(values), max(values)


def spread(values):
    lo, hi = minmax(values)
    return hi - lo
