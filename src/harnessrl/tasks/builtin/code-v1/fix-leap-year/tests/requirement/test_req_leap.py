from calendar_utils import days_in_month, is_leap


def test_centuries():
    assert not is_leap(1900)
    assert not is_leap(2100)
    assert is_leap(2000)


def test_february_1900():
    assert days_in_month(1900, 2) == 28
