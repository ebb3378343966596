"""Sequences and combinatorics."""


def triangular(n):
    """The n-th triangular number 1 + 2 + ... + n."""
    return n * (n + 1) // 2


def arithmetic_sequence(start, step, count):
    """`count` terms starting at `start`, `step` apart."""
    return [start + i * step for i in range(count)]


def geometric_sum(a, r, n):
    """a + a*r + ... + a*r**(n-1)."""
    total = 0
    term = a
    for _ in range(n):
        total += term
        term *= r
    return total


def choose(n, k):
    """The binomial coefficient C(n, k); 0 when k is out of range."""
    if k < 0 or k > n:
        return 0
    k = min(k, n - k)
    result = 1
    for i in range(1, k + 1):
        result = result * (n - k + i) // i
    return result


def pascal_row(n):
    """Row `n` of Pascal's triangle (row 0 is [1])."""
    row = [1]
    for _ in range(n):
        row = [1] + [row[i] + row[i + 1] for i in range(len(row) - 1)] + [1]
    return row


def permutations_count(n, k):
    """Ordered selections of `k` out of `n`: n! / (n - k)!."""
    result = 1
    for i in range(n - k + 1, n + 1):
        result *= i
    return result


def look_and_say(term):
    """The next term of the look-and-say sequence: "1211" -> "111221"."""
    out = []
    i = 0
    while i < len(term):
        j = i
        while j < len(term) and term[j] == term[i]:
            j += 1
        out.append(f"{j - i}{term[i]}")
        i = j
    return "".join(out)


def is_arithmetic(xs):
    """True when consecutive differences are all equal (lists shorter than 3 count as arithmetic)."""
    if len(xs) < 3:
        return True
    step = xs[1] - xs[0]
    return all(xs[i + 1] - xs[i] == step for i in range(len(xs) - 1))


def powerset_size(items):
    """The number of subsets of the distinct elements of `items`."""
    return 2 ** len(set(items))


def subsets_of_size(items, k):
    """All k-element subsets as sorted tuples, in lexicographic order."""
    items = sorted(items)
    if k == 0:
        return [()]
    if k > len(items):
        return []
    out = []
    for i, first in enumerate(items):
        for rest in subsets_of_size(items[i + 1:], k - 1):
            out.append((first,) + rest)
    return out


def catalan(n):
    """The n-th Catalan number."""
    return choose(2 * n, n) // (n + 1)
