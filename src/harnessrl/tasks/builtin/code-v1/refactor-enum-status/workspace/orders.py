TRANSITIONS = {"new": "paid", "paid": "shipped"}


def next_status(status):
    if status not in TRANSITIONS:
        raise ValueError(f"no transition from {status!r}")
    return TRANSITIONS[status]


def can_cancel(status):
    return status in ("new", "paid")
