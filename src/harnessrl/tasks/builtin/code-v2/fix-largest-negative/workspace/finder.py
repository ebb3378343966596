def largest(xs):
    if not xs:
        raise ValueError("empty list")
    best = 0
    for x in xs:
        if x > best:
            best = x
    return best
