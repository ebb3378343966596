"""Descriptive statistics on lists of numbers."""


def mean(xs):
    """The arithmetic mean; ValueError for an empty list."""
    if not xs:
        raise ValueError("mean of an empty list")
    return sum(xs) / len(xs)


def median(xs):
    """The middle value of the sorted list (the mean of the two middle ones for an even length)."""
    s = sorted(xs)
    n = len(s)
    mid = n // 2
    if n % 2 == 1:
        return s[mid]
    return (s[mid - 1] + s[mid]) / 2


def mode(xs):
    """The most common value; the smallest of them on a tie."""
    counts = {}
    for x in xs:
        counts[x] = counts.get(x, 0) + 1
    best = max(counts.values())
    return min(x for x, c in counts.items() if c == best)


def variance(xs):
    """The population variance: the mean squared distance from the mean."""
    mu = mean(xs)
    return sum((x - mu) ** 2 for x in xs) / len(xs)


def value_range(xs):
    """max - min; 0 for an empty list."""
    if not xs:
        return 0
    return max(xs) - min(xs)


def normalize(xs):
    """Scale to [0, 1]: (x - min) / (max - min); all zeros when every value is equal."""
    lo, hi = min(xs), max(xs)
    if hi == lo:
        return [0.0 for _ in xs]
    return [(x - lo) / (hi - lo) for x in xs]


def percentile_rank(xs, value):
    """Percent (0-100) of the values in `xs` that are strictly below `value`."""
    if not xs:
        return 0.0
    below = sum(1 for x in xs if x < value)
    return 100.0 * below / len(xs)


def moving_average(xs, width):
    """The mean of every window of `width` consecutive values."""
    out = []
    for i in range(len(xs) - width + 1):
        out.append(sum(xs[i:i + width]) / width)
    return out


def clamp(x, lo, hi):
    """`x` limited to [lo, hi]."""
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def weighted_mean(values, weights):
    """sum(v * w) / sum(w); ValueError when the weights sum to zero."""
    total = sum(weights)
    if total == 0:
        raise ValueError("weights sum to zero")
    return sum(v * w for v, w in zip(values, weights)) / total


def histogram(xs, bins, lo, hi):
    """Counts of `xs` in `bins` equal-width bins over [lo, hi); values outside are ignored."""
    counts = [0] * bins
    width = (hi - lo) / bins
    for x in xs:
        if lo <= x < hi:
            counts[int((x - lo) / width)] += 1
    return counts
