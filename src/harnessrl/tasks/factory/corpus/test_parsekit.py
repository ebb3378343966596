import pytest

import parsekit as m


@pytest.mark.parametrize("args, expected", [
    (("a=1; b=two",), {"a": "1", "b": "two"}), (("",), {}), (("x = 5 ;",), {"x": "5"}), (("k=a=b",), {"k": "a=b"}),
    (("flag",), {"flag": ""}),
])
def test_parse_kv(args, expected):
    assert m.parse_kv(*args) == expected


@pytest.mark.parametrize("args, expected", [(("1, 2,3",), [1, 2, 3]), (("",), []), (("  ",), []), (("-4",), [-4]), (("10,20",), [10, 20])])
def test_parse_int_list(args, expected):
    assert m.parse_int_list(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("1-3,5",), [1, 2, 3, 5]), (("7",), [7]), (("2-2",), [2]), (("1,3-4,9",), [1, 3, 4, 9]), (("5-7",), [5, 6, 7]),
])
def test_parse_range_list(args, expected):
    assert m.parse_range_list(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("1h30m",), 5400), (("45s",), 45), (("2m5s",), 125), (("1h",), 3600), (("",), 0), (("10m",), 600),
])
def test_parse_duration(args, expected):
    assert m.parse_duration(*args) == expected


@pytest.mark.parametrize("text", ["5", "1x", "h", "3m4"])
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError):
        m.parse_duration(text)


@pytest.mark.parametrize("args, expected", [(("1.10.2",), (1, 10, 2)), (("2",), (2, 0, 0)), (("0.1",), (0, 1, 0)), (("3.0.0",), (3, 0, 0))])
def test_parse_version(args, expected):
    assert m.parse_version(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("1.2", "1.10"), -1), (("2.0", "1.9.9"), 1), (("1.0", "1"), 0), (("0.0.1", "0.0.2"), -1), (("3.1", "3.0.5"), 1),
])
def test_compare_versions(args, expected):
    assert m.compare_versions(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("a,b,c",), ["a", "b", "c"]), (('"x,y",z',), ["x,y", "z"]), (('"say ""hi""",ok',), ['say "hi"', "ok"]),
    (("",), [""]), (("a,,b",), ["a", "", "b"]), (("one",), ["one"]),
])
def test_split_csv_line(args, expected):
    assert m.split_csv_line(*args) == expected


@pytest.mark.parametrize("args, expected", [(("XIV",), 14), (("MCMXCIV",), 1994), (("III",), 3), (("IX",), 9), (("LVIII",), 58), (("CD",), 400)])
def test_roman_to_int(args, expected):
    assert m.roman_to_int(*args) == expected


@pytest.mark.parametrize("args, expected", [((14,), "XIV"), ((1994,), "MCMXCIV"), ((3,), "III"), ((40,), "XL"), ((3999,), "MMMCMXCIX"), ((1,), "I")])
def test_int_to_roman(args, expected):
    assert m.int_to_roman(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("yes",), True), ((" TRUE ",), True), (("on",), True), (("1",), True), (("no",), False), (("Off",), False), (("0",), False),
    (("false",), False),
])
def test_parse_bool(args, expected):
    assert m.parse_bool(*args) == expected


def test_parse_bool_rejects():
    with pytest.raises(ValueError):
        m.parse_bool("maybe")


@pytest.mark.parametrize("args, expected", [(("10",), 10), (("4K",), 4096), (("2m",), 2097152), (("1G",), 1073741824), ((" 3k ",), 3072)])
def test_parse_size(args, expected):
    assert m.parse_size(*args) == expected
