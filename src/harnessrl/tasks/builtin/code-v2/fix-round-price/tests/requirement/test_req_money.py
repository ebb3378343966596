from money import format_price, round_price


def test_cents_kept():
    assert round_price(3.456) == 3.46


def test_format():
    assert format_price(9.999) == "10.00"
    assert format_price(1.25) == "1.25"
