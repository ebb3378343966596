def full_name(first, last):
    return first + " " + last


def sort_key(first, last):
    return (last.lower(), first.lower())
