def compare(a, b):
    if a == b:
        return 0
    return -1 if a < b else 1


def latest(versions):
    best = versions[0]
    for v in versions[1:]:
        if compare(v, best) > 0:
            best = v
    return best
