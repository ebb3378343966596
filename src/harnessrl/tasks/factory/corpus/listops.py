"""Small list helpers."""


def chunk(items, size):
    """Split `items` into consecutive lists of `size` elements; the last one may be shorter."""
    if size <= 0:
        raise ValueError("size must be positive")
    return [items[i:i + size] for i in range(0, len(items), size)]


def flatten(nested):
    """One flat list of the elements of `nested`, a list whose elements may themselves be lists (any depth)."""
    out = []
    for item in nested:
        if isinstance(item, list):
            out.extend(flatten(item))
        else:
            out.append(item)
    return out


def dedupe(items):
    """The elements of `items` without repeats, in the order they first appear."""
    seen = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def rotate(items, k):
    """`items` rotated left by `k` places (negative `k` rotates right); an empty list stays empty."""
    if not items:
        return []
    k = k % len(items)
    return items[k:] + items[:k]


def running_sum(numbers):
    """The list of prefix sums: [1, 2, 3] -> [1, 3, 6]."""
    total = 0
    out = []
    for n in numbers:
        total += n
        out.append(total)
    return out


def pairwise_diff(numbers):
    """Differences of neighbours: [1, 4, 9] -> [3, 5]."""
    return [numbers[i + 1] - numbers[i] for i in range(len(numbers) - 1)]


def interleave(a, b):
    """Elements of `a` and `b` alternately (a first); the rest of the longer list at the end."""
    out = []
    for i in range(max(len(a), len(b))):
        if i < len(a):
            out.append(a[i])
        if i < len(b):
            out.append(b[i])
    return out


def index_of_max(numbers):
    """The index of the first largest element; None for an empty list."""
    if not numbers:
        return None
    best = 0
    for i in range(1, len(numbers)):
        if numbers[i] > numbers[best]:
            best = i
    return best


def partition(items, predicate):
    """(elements for which `predicate` is true, the others), each in the original order."""
    yes, no = [], []
    for item in items:
        if predicate(item):
            yes.append(item)
        else:
            no.append(item)
    return yes, no


def second_largest(numbers):
    """The second largest distinct value, or None when there are fewer than two distinct values."""
    distinct = sorted(set(numbers), reverse=True)
    if len(distinct) < 2:
        return None
    return distinct[1]


def window_max(numbers, width):
    """The maximum of every window of `width` consecutive elements."""
    if width <= 0 or width > len(numbers):
        return []
    return [max(numbers[i:i + width]) for i in range(len(numbers) - width + 1)]


def merge_sorted(a, b):
    """Merge two ascending lists into one ascending list."""
    i = j = 0
    out = []
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    out.extend(a[i:])
    out.extend(b[j:])
    return out
