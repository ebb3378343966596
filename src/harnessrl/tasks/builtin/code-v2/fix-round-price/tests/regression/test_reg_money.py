from money import format_price, round_price


def test_whole():
    assert round_price(4.0) == 4
    assert format_price(7) == "7.00"
