import pytest
from calendar_utils import days_in_month, is_leap


def test_ordinary_years():
    assert is_leap(2024) and not is_leap(2023)


def test_months():
    assert [days_in_month(2023, m) for m in (1, 2, 4)] == [31, 28, 30]
    assert days_in_month(2024, 2) == 29
    with pytest.raises(ValueError):
        days_in_month(2024, 13)
