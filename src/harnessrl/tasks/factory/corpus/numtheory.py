"""Integer arithmetic helpers."""


def gcd(a, b):
    """Greatest common divisor of two non-negative integers (gcd(0, 0) is 0)."""
    while b:
        a, b = b, a % b
    return a


def lcm(a, b):
    """Least common multiple of two positive integers."""
    return a * b // gcd(a, b)


def is_prime(n):
    """True when `n` is a prime number."""
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    d = 3
    while d * d <= n:
        if n % d == 0:
            return False
        d += 2
    return True


def prime_factors(n):
    """The prime factors of `n` >= 2 in ascending order, with multiplicity: 12 -> [2, 2, 3]."""
    factors = []
    d = 2
    while d * d <= n:
        while n % d == 0:
            factors.append(d)
            n //= d
        d += 1
    if n > 1:
        factors.append(n)
    return factors


def digit_sum(n):
    """The sum of the decimal digits of `n` (its sign ignored)."""
    n = abs(n)
    total = 0
    while n > 0:
        total += n % 10
        n //= 10
    return total


def factorial(n):
    """n! for n >= 0."""
    result = 1
    for k in range(2, n + 1):
        result *= k
    return result


def fibonacci(n):
    """The n-th Fibonacci number: fibonacci(0) = 0, fibonacci(1) = 1."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def collatz_steps(n):
    """How many steps of the Collatz map (n/2 if even, 3n+1 if odd) take `n` to 1."""
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n //= 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def is_perfect(n):
    """True when `n` equals the sum of its proper divisors (6 = 1 + 2 + 3)."""
    if n < 2:
        return False
    total = 1
    for d in range(2, int(n ** 0.5) + 1):
        if n % d == 0:
            total += d
            if d != n // d:
                total += n // d
    return total == n


def to_base(n, base):
    """The digits of `n` >= 0 in `base` (2..16) as a string, lower-case letters above 9."""
    digits = "0123456789abcdef"
    if n == 0:
        return "0"
    out = ""
    while n > 0:
        out = digits[n % base] + out
        n //= base
    return out


def from_base(text, base):
    """The integer whose digits in `base` are `text` (the inverse of to_base)."""
    digits = "0123456789abcdef"
    value = 0
    for ch in text.lower():
        value = value * base + digits.index(ch)
    return value


def int_sqrt(n):
    """The largest integer r with r * r <= n, for n >= 0."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if mid * mid <= n:
            lo = mid
        else:
            hi = mid - 1
    return lo
