def initials(name):
    return "".join(w[0] for w in name.split())


def surname(name):
    return name.split()[-1]
