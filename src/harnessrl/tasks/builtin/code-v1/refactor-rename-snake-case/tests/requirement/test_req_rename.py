import inspect
import warnings

import pytest

import pricing


def test_new_name():
    assert pricing.calculate_total([1.0, 2.0], tax_rate=0.5) == 4.5


def test_alias_warns():
    with pytest.warns(DeprecationWarning, match="calculate_total"):
        assert pricing.calcTotal([10.0]) == 10.0


def test_receipt_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pricing.receipt([1.0, 1.0]) == "2 items, total 2.00"
    assert "calcTotal" not in inspect.getsource(pricing.receipt)
