def safe_get(xs, i, default=None):
    if i < 0 or i > len(xs):
        return default
    return xs[i]


def safe_first(xs):
    return safe_get(xs, 0)
