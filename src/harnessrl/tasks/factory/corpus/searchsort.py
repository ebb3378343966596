"""Searching and sorting, written out by hand."""


def binary_search(items, target):
    """The index of `target` in the ascending list `items`, or -1."""
    lo, hi = 0, len(items) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if items[mid] == target:
            return mid
        if items[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


def lower_bound(items, target):
    """The first index whose element is >= `target` in an ascending list (len(items) if none)."""
    lo, hi = 0, len(items)
    while lo < hi:
        mid = (lo + hi) // 2
        if items[mid] < target:
            lo = mid + 1
        else:
            hi = mid
    return lo


def insertion_sort(items):
    """A new ascending list with the elements of `items`."""
    out = list(items)
    for i in range(1, len(out)):
        key = out[i]
        j = i - 1
        while j >= 0 and out[j] > key:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = key
    return out


def bubble_sort_passes(items):
    """How many full passes bubble sort needs before a pass makes no swap (0 for a sorted list)."""
    out = list(items)
    passes = 0
    swapped = True
    while swapped:
        swapped = False
        for i in range(len(out) - 1):
            if out[i] > out[i + 1]:
                out[i], out[i + 1] = out[i + 1], out[i]
                swapped = True
        if swapped:
            passes += 1
    return passes


def is_sorted(items, reverse=False):
    """True when `items` is in ascending order (descending with reverse=True); ties allowed."""
    for a, b in zip(items, items[1:]):
        if (a > b and not reverse) or (a < b and reverse):
            return False
    return True


def kth_smallest(items, k):
    """The k-th smallest element (k = 1 is the minimum)."""
    if k < 1 or k > len(items):
        raise IndexError("k out of range")
    return sorted(items)[k - 1]


def count_inversions(items):
    """Pairs i < j with items[i] > items[j]."""
    count = 0
    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            if items[i] > items[j]:
                count += 1
    return count


def find_peak(items):
    """The index of the first element not smaller than its neighbours; None for an empty list."""
    for i in range(len(items)):
        left = items[i - 1] if i > 0 else None
        right = items[i + 1] if i + 1 < len(items) else None
        if (left is None or items[i] >= left) and (right is None or items[i] >= right):
            return i
    return None


def two_sum(items, target):
    """Indices (i, j), i < j, of the first pair that adds up to `target`, or None."""
    seen = {}
    for j, x in enumerate(items):
        if target - x in seen:
            return seen[target - x], j
        if x not in seen:
            seen[x] = j
    return None


def sort_by_length(words):
    """Words sorted by length, then alphabetically."""
    return sorted(words, key=lambda w: (len(w), w))
