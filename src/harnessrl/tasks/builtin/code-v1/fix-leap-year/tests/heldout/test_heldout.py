from calendar_utils import days_in_month, is_leap


def test_other_centuries():
    assert not is_leap(1700) and not is_leap(1800) and not is_leap(2300)
    assert is_leap(1600) and is_leap(2400)
    assert days_in_month(2200, 2) == 28 and days_in_month(2400, 2) == 29
