def unique(xs):
    return list(set(xs))


def duplicates(xs):
    seen, out = set(), []
    for x in xs:
        if x in seen and x not in out:
            out.append(x)
        seen.add(x)
    return out
