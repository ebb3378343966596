import inspect

import pytest

import money


def test_format_money():
    assert money.format_money(1234.5, "EUR") == "€1,234.50"
    assert money.format_money(-3, "GBP") == "-£3.00"
    with pytest.raises(ValueError):
        money.format_money(1, "XYZ")


def test_wrappers_delegate():
    for name in ("format_usd", "format_eur", "format_gbp"):
        src = inspect.getsource(getattr(money, name))
        assert "format_money(" in src and "abs(" not in src
