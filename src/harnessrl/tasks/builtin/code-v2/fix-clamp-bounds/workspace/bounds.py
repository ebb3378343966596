def clamp(x, lo, hi):
    return max(hi, min(lo, x))


def in_bounds(x, lo, hi):
    return lo <= x <= hi
