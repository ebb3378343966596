def exclusive_range(a, b):
    return list(range(a, b))


def inclusive_range(a, b):
    return list(range(a, b))
