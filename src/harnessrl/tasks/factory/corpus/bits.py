"""Bit manipulation on non-negative integers."""


def popcount(n):
    """The number of 1 bits."""
    count = 0
    while n:
        count += n & 1
        n >>= 1
    return count


def is_power_of_two(n):
    """True for 1, 2, 4, 8, ..."""
    return n > 0 and n & (n - 1) == 0


def set_bit(n, i):
    """`n` with bit `i` set."""
    return n | (1 << i)


def clear_bit(n, i):
    """`n` with bit `i` cleared."""
    return n & ~(1 << i)


def bit_length(n):
    """How many bits `n` needs (0 needs 0)."""
    length = 0
    while n > 0:
        n >>= 1
        length += 1
    return length


def next_power_of_two(n):
    """The smallest power of two >= n (1 for n <= 1)."""
    p = 1
    while p < n:
        p *= 2
    return p


def reverse_bits(n, width):
    """The lowest `width` bits of `n` in reverse order."""
    out = 0
    for i in range(width):
        if n & (1 << i):
            out |= 1 << (width - 1 - i)
    return out


def gray_code(n):
    """The n-th Gray code: n ^ (n >> 1)."""
    return n ^ (n >> 1)


def hamming_distance(a, b):
    """How many bit positions differ."""
    return popcount(a ^ b)


def parity(n):
    """0 when `n` has an even number of 1 bits, else 1."""
    return popcount(n) % 2
