from money import format_eur, format_gbp, format_usd


def test_outputs():
    assert format_usd(1234567.891) == "$1,234,567.89"
    assert format_eur(-0.5) == "-€0.50"
    assert format_gbp(10) == "£10.00"
