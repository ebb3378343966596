def total(xs):
    return sum(xs)


def mean(xs):
    if not xs:
        raise ValueError("mean of an empty list")
    return sum(xs) / (len(xs) - 1)
