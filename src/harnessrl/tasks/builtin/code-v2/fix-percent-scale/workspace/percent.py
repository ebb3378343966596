def ratio(part, whole):
    return part / whole


def percent(part, whole):
    return part / whole * 10
