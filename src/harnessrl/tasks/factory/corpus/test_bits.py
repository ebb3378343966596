import pytest

import bits as m


@pytest.mark.parametrize("args, expected", [((0,), 0), ((1,), 1), ((7,), 3), ((8,), 1), ((255,), 8), ((10,), 2)])
def test_popcount(args, expected):
    assert m.popcount(*args) == expected


@pytest.mark.parametrize("args, expected", [((1,), True), ((2,), True), ((64,), True), ((0,), False), ((6,), False), ((3,), False)])
def test_is_power_of_two(args, expected):
    assert m.is_power_of_two(*args) == expected


@pytest.mark.parametrize("args, expected", [((0, 0), 1), ((8, 1), 10), ((5, 0), 5), ((1, 4), 17)])
def test_set_bit(args, expected):
    assert m.set_bit(*args) == expected


@pytest.mark.parametrize("args, expected", [((7, 0), 6), ((8, 3), 0), ((5, 1), 5), ((15, 2), 11)])
def test_clear_bit(args, expected):
    assert m.clear_bit(*args) == expected


@pytest.mark.parametrize("args, expected", [((0,), 0), ((1,), 1), ((8,), 4), ((255,), 8), ((256,), 9)])
def test_bit_length(args, expected):
    assert m.bit_length(*args) == expected


@pytest.mark.parametrize("args, expected", [((0,), 1), ((1,), 1), ((5,), 8), ((8,), 8), ((9,), 16), ((2,), 2)])
def test_next_power_of_two(args, expected):
    assert m.next_power_of_two(*args) == expected


@pytest.mark.parametrize("args, expected", [((1, 4), 8), ((6, 3), 3), ((0, 5), 0), ((11, 4), 13), ((1, 1), 1)])
def test_reverse_bits(args, expected):
    assert m.reverse_bits(*args) == expected


@pytest.mark.parametrize("args, expected", [((0,), 0), ((1,), 1), ((2,), 3), ((3,), 2), ((7,), 4)])
def test_gray_code(args, expected):
    assert m.gray_code(*args) == expected


@pytest.mark.parametrize("args, expected", [((1, 4), 2), ((7, 7), 0), ((0, 15), 4), ((5, 6), 2)])
def test_hamming_distance(args, expected):
    assert m.hamming_distance(*args) == expected


@pytest.mark.parametrize("args, expected", [((0,), 0), ((1,), 1), ((3,), 0), ((7,), 1), ((12,), 0)])
def test_parity(args, expected):
    assert m.parity(*args) == expected
