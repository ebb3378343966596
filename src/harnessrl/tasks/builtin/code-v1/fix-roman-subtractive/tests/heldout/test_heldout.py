from roman import to_roman


def test_other_numbers():
    assert to_roman(14) == "XIV" and to_roman(49) == "XLIX" and to_roman(444) == "CDXLIV"
    assert to_roman(2024) == "MMXXIV" and to_roman(999) == "CMXCIX"
