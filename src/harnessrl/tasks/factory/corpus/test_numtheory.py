import pytest

import numtheory as m


@pytest.mark.parametrize("args, expected", [((12, 18), 6), ((7, 5), 1), ((0, 9), 9), ((9, 0), 9), ((0, 0), 0), ((100, 75), 25)])
def test_gcd(args, expected):
    assert m.gcd(*args) == expected


@pytest.mark.parametrize("args, expected", [((4, 6), 12), ((3, 5), 15), ((7, 7), 7), ((1, 9), 9), ((10, 4), 20)])
def test_lcm(args, expected):
    assert m.lcm(*args) == expected


@pytest.mark.parametrize("args, expected", [
    ((2,), True), ((3,), True), ((4,), False), ((1,), False), ((0,), False), ((9,), False), ((25,), False),
    ((29,), True), ((49,), False), ((97,), True),
])
def test_is_prime(args, expected):
    assert m.is_prime(*args) == expected


@pytest.mark.parametrize("args, expected", [
    ((12,), [2, 2, 3]), ((13,), [13]), ((2,), [2]), ((100,), [2, 2, 5, 5]), ((49,), [7, 7]), ((30,), [2, 3, 5]),
])
def test_prime_factors(args, expected):
    assert m.prime_factors(*args) == expected


@pytest.mark.parametrize("args, expected", [((123,), 6), ((0,), 0), ((-45,), 9), ((1000,), 1), ((99,), 18)])
def test_digit_sum(args, expected):
    assert m.digit_sum(*args) == expected


@pytest.mark.parametrize("args, expected", [((0,), 1), ((1,), 1), ((2,), 2), ((5,), 120), ((6,), 720)])
def test_factorial(args, expected):
    assert m.factorial(*args) == expected


@pytest.mark.parametrize("args, expected", [((0,), 0), ((1,), 1), ((2,), 1), ((7,), 13), ((10,), 55)])
def test_fibonacci(args, expected):
    assert m.fibonacci(*args) == expected


@pytest.mark.parametrize("args, expected", [((1,), 0), ((2,), 1), ((6,), 8), ((7,), 16), ((27,), 111)])
def test_collatz_steps(args, expected):
    assert m.collatz_steps(*args) == expected


@pytest.mark.parametrize("args, expected", [
    ((6,), True), ((28,), True), ((496,), True), ((12,), False), ((1,), False), ((16,), False), ((25,), False),
])
def test_is_perfect(args, expected):
    assert m.is_perfect(*args) == expected


@pytest.mark.parametrize("args, expected", [((10, 2), "1010"), ((255, 16), "ff"), ((0, 7), "0"), ((8, 8), "10"), ((35, 3), "1022")])
def test_to_base(args, expected):
    assert m.to_base(*args) == expected


@pytest.mark.parametrize("args, expected", [(("1010", 2), 10), (("FF", 16), 255), (("0", 5), 0), (("777", 8), 511), (("z0"[1:], 3), 0)])
def test_from_base(args, expected):
    assert m.from_base(*args) == expected


@pytest.mark.parametrize("args, expected", [((0,), 0), ((1,), 1), ((15,), 3), ((16,), 4), ((99,), 9), ((2,), 1)])
def test_int_sqrt(args, expected):
    assert m.int_sqrt(*args) == expected
