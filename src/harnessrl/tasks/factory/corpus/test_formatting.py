import pytest

import formatting as m


@pytest.mark.parametrize("args, expected", [((1234567,), "1,234,567"), ((0,), "0"), ((999,), "999"), ((1000,), "1,000"), ((-98765,), "-98,765")])
def test_thousands(args, expected):
    assert m.thousands(*args) == expected


@pytest.mark.parametrize("args, expected", [
    ((512,), "512 B"), ((2048,), "2.0 KiB"), ((1023,), "1023 B"), ((1024,), "1.0 KiB"), ((1572864,), "1.5 MiB"),
    ((1024 ** 5,), "1024.0 TiB"),
])
def test_human_bytes(args, expected):
    assert m.human_bytes(*args) == expected


@pytest.mark.parametrize("args, expected", [
    ((1,), "1st"), ((2,), "2nd"), ((3,), "3rd"), ((4,), "4th"), ((11,), "11th"), ((12,), "12th"), ((13,), "13th"),
    ((21,), "21st"), ((102,), "102nd"), ((111,), "111th"),
])
def test_ordinal(args, expected):
    assert m.ordinal(*args) == expected


@pytest.mark.parametrize("args, expected", [((1, "apple"), "1 apple"), ((2, "apple"), "2 apples"), ((0, "box", "boxes"), "0 boxes"), ((1, "box", "boxes"), "1 box")])
def test_plural(args, expected):
    assert m.plural(*args) == expected


@pytest.mark.parametrize("args, expected", [((1, 4), "25.0%"), ((1, 3, 2), "33.33%"), ((5, 0), "n/a"), ((0, 7), "0.0%"), ((3, 2, 0), "150%")])
def test_percent(args, expected):
    assert m.percent(*args) == expected


@pytest.mark.parametrize("args, expected", [((["a"],), "a"), ((["a", "b"],), "a and b"), ((["a", "b", "c"],), "a, b and c"), (([],), "")])
def test_join_names(args, expected):
    assert m.join_names(*args) == expected


@pytest.mark.parametrize("args, expected", [((["a", 1], [3, 2]), "a   | 1 "), ((["long", "x"], [2, 1]), "long | x"), (([], []), "")])
def test_table_row(args, expected):
    assert m.table_row(*args) == expected


@pytest.mark.parametrize("args, expected", [((123456,), "$1,234.56"), ((-5,), "-$0.05"), ((100, "EUR "), "EUR 1.00"), ((0,), "$0.00"), ((99,), "$0.99")])
def test_money(args, expected):
    assert m.money(*args) == expected


@pytest.mark.parametrize("args, expected", [
    ((5,), "just now"), ((60,), "1 minute ago"), ((150,), "2 minutes ago"), ((3600,), "1 hour ago"), ((7300,), "2 hours ago"),
    ((86400,), "1 day ago"), ((200000,), "2 days ago"), ((59,), "just now"),
])
def test_elapsed(args, expected):
    assert m.elapsed(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("the quick brown fox", 10), ["the quick", "brown fox"]), (("a b c", 1), ["a", "b", "c"]), (("", 5), []),
    (("extraordinary word", 5), ["extraordinary", "word"]), (("ab cd", 5), ["ab cd"]),
])
def test_wrap(args, expected):
    assert m.wrap(*args) == expected
