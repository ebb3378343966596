import pytest

import money


def test_other_amounts():
    assert money.format_money(0, "EUR") == "€0.00"
    assert money.format_money(1234567.891, "GBP") == "£1,234,567.89"
    assert money.format_usd(-12.5) == money.format_money(-12.5, "USD")
    with pytest.raises(ValueError):
        money.format_money(5, "eur!")
