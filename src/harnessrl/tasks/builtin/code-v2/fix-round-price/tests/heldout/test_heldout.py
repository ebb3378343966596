from money import format_price, round_price


def test_other_prices():
    assert round_price(0.129) == 0.13
    assert round_price(12.5) == 12.5
    assert format_price(2.5) == "2.50"
