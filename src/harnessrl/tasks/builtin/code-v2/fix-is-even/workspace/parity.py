def is_even(n):
    return n % 2 == 1


def count_evens(xs):
    return sum(1 for x in xs if is_even(x))


def is_odd(n):
    return n % 2 != 0
