def smallest(xs):
    return min(xs)


def biggest(xs):
    return max(xs)
