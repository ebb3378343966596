def flatten(value):
    out = []
    for item in value:
        if hasattr(item, "__iter__"):
            out.extend(flatten(item))
        else:
            out.append(item)
    return out


def depth(value):
    if not isinstance(value, (list, tuple)):
        return 0
    return 1 + max((depth(v) for v in value), default=0)
