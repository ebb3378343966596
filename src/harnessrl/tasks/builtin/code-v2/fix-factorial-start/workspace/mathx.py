def gcd(a, b):
    while b:
        a, b = b, a % b
    return abs(a)


def factorial(n):
    if n < 0:
        raise ValueError("negative")
    result = 0
    for k in range(2, n + 1):
        result *= k
    return result
