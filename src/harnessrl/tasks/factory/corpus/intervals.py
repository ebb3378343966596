"""Closed integer intervals as (start, end) pairs."""


def overlaps(a, b):
    """True when the intervals share at least one point."""
    return a[0] <= b[1] and b[0] <= a[1]


def merge_intervals(intervals):
    """Overlapping or touching intervals merged, sorted by start: [(1, 3), (2, 5), (7, 8)] -> [(1, 5), (7, 8)]."""
    out = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def total_length(intervals):
    """How many integer points the union of the intervals covers."""
    return sum(end - start + 1 for start, end in merge_intervals(intervals))


def intersection(a, b):
    """The common part of two intervals, or None."""
    start, end = max(a[0], b[0]), min(a[1], b[1])
    if start > end:
        return None
    return start, end


def contains_point(intervals, x):
    """True when some interval contains `x`."""
    return any(start <= x <= end for start, end in intervals)


def gaps(intervals, lo, hi):
    """The parts of [lo, hi] that no interval covers, in order."""
    out = []
    cursor = lo
    for start, end in merge_intervals(intervals):
        if end < lo or start > hi:
            continue
        if start > cursor:
            out.append((cursor, start - 1))
        cursor = max(cursor, end + 1)
    if cursor <= hi:
        out.append((cursor, hi))
    return out


def split_interval(interval, size):
    """Consecutive pieces of at most `size` points covering the interval."""
    start, end = interval
    out = []
    while start <= end:
        out.append((start, min(start + size - 1, end)))
        start += size
    return out


def max_overlap(intervals):
    """The largest number of intervals that share one point."""
    events = []
    for start, end in intervals:
        events.append((start, 1))
        events.append((end + 1, -1))
    best = current = 0
    for _, delta in sorted(events):
        current += delta
        best = max(best, current)
    return best


def shift(interval, by):
    """The interval moved by `by`."""
    return interval[0] + by, interval[1] + by
