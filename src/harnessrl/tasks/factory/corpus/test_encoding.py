import pytest

import encoding as m


@pytest.mark.parametrize("args, expected", [
    (("abc", 1), "bcd"), (("xyz", 3), "abc"), (("Hello, World!", 13), "Uryyb, Jbeyq!"), (("abc", -1), "zab"), (("", 5), ""),
    (("Zz", 1), "Aa"),
])
def test_caesar(args, expected):
    assert m.caesar(*args) == expected


@pytest.mark.parametrize("args, expected", [(("aaab",), "3a1b"), (("",), ""), (("abc",), "1a1b1c"), (("zzzzzzzzzzzz",), "12z"), (("aabba",), "2a2b1a")])
def test_rle_encode(args, expected):
    assert m.rle_encode(*args) == expected


@pytest.mark.parametrize("args, expected", [(("3a1b",), "aaab"), (("",), ""), (("12z",), "zzzzzzzzzzzz"), (("1x2y",), "xyy")])
def test_rle_decode(args, expected):
    assert m.rle_decode(*args) == expected


@pytest.mark.parametrize("args, expected", [((b"\x00\xff",), "00ff"), ((b"",), ""), ((b"AB",), "4142"), ((b"\x0a",), "0a")])
def test_to_hex(args, expected):
    assert m.to_hex(*args) == expected


@pytest.mark.parametrize("args, expected", [(("00ff",), b"\x00\xff"), (("",), b""), (("4142",), b"AB"), (("0A",), b"\n")])
def test_from_hex(args, expected):
    assert m.from_hex(*args) == expected


def test_from_hex_rejects_odd():
    with pytest.raises(ValueError):
        m.from_hex("abc")


@pytest.mark.parametrize("args, expected", [(("abc",), "zyx"), (("hello world",), "svool dliow"), (("A1",), "A1"), (("",), "")])
def test_atbash(args, expected):
    assert m.atbash(*args) == expected


@pytest.mark.parametrize("args, expected", [(("banana",), "b*n*n*"), (("AEx",), "**x"), (("sky",), "sky"), (("oboe", "_"), "_b__")])
def test_vowel_mask(args, expected):
    assert m.vowel_mask(*args) == expected


@pytest.mark.parametrize("args, expected", [((b"\x01\x02",), 3), ((b"",), 0), ((b"\xff\x02",), 1), ((b"\x80\x80",), 0)])
def test_checksum(args, expected):
    assert m.checksum(*args) == expected


@pytest.mark.parametrize("args, expected", [((5, 8), "00000101"), ((0, 3), "000"), ((255, 4), "11111111"), ((2, 1), "10"), ((6, 0), "110")])
def test_binary_string(args, expected):
    assert m.binary_string(*args) == expected


@pytest.mark.parametrize("args, expected", [((b"\x0f\xf0", b"\xff\xff"), b"\xf0\x0f"), ((b"ab", b""), b""), ((b"\x01", b"\x01\x02"), b"\x00")])
def test_xor_bytes(args, expected):
    assert m.xor_bytes(*args) == expected
