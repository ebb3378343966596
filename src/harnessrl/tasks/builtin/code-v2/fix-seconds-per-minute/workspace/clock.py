def to_seconds(minutes, seconds):
    return minutes * 100 + seconds


def split_seconds(total):
    return divmod(total, 60)
