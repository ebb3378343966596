import pytest

import validators as m


@pytest.mark.parametrize("args, expected", [
    (("4539 1488 0343 6467",), True), (("8273 1232 7352 0569",), False), (("0",), False), (("059",), True),
    (("79927398713",), True), (("79927398710",), False),
])
def test_luhn_valid(args, expected):
    assert m.luhn_valid(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("0-306-40615-2",), True), (("0306406153",), False), (("080442957X",), True), (("12345",), False),
    (("X804429570",), False), (("03064O6152",), False),
])
def test_isbn10_valid(args, expected):
    assert m.isbn10_valid(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("a@b.co",), True), (("ab.co",), False), (("a@@b.co",), False), (("@b.co",), False), (("a@bco",), False),
    (("a@.bco",), False), (("a@bco.",), False), (("first.last@mail.example.org",), True),
])
def test_is_email(args, expected):
    assert m.is_email(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("192.168.0.1",), True), (("255.255.255.255",), True), (("256.1.1.1",), False), (("1.2.3",), False),
    (("01.2.3.4",), False), (("1.2.3.a",), False), (("0.0.0.0",), True), (("1.2.3.4.5",), False),
])
def test_is_ipv4(args, expected):
    assert m.is_ipv4(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("#fff",), True), (("#A0b1C2",), True), (("fff",), False), (("#ffff",), False), (("#ggg",), False), (("#123456",), True),
])
def test_is_hex_color(args, expected):
    assert m.is_hex_color(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("abc",), 0), (("abcdefgh",), 1), (("abc1",), 1), (("Abc",), 1), (("a!",), 1), (("Abcdefg1!",), 4), (("ABCDEFG1",), 3),
])
def test_password_strength(args, expected):
    assert m.password_strength(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("([]{})",), True), (("(]",), False), (("((",), False), (("",), True), (("a(b)c",), True), (("}{",), False),
    (("([)]",), False),
])
def test_balanced_brackets(args, expected):
    assert m.balanced_brackets(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("name",), True), (("_x1",), True), (("1x",), False), (("",), False), (("a-b",), False), (("caf\u00e9",), False), (("A",), True),
])
def test_is_identifier(args, expected):
    assert m.is_identifier(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("23:59:60",), True), (("00:00:00",), True), (("24:00:00",), False), (("12:60:00",), False), (("12:00:61",), False),
    (("1:00:00",), False), (("12:00",), False),
])
def test_is_leap_second_time(args, expected):
    assert m.is_leap_second_time(*args) == expected
