import pytest

import datekit as m


@pytest.mark.parametrize("args, expected", [((2024,), True), ((2023,), False), ((1900,), False), ((2000,), True), ((2100,), False)])
def test_is_leap(args, expected):
    assert m.is_leap(*args) == expected


@pytest.mark.parametrize("args, expected", [
    ((2023, 1), 31), ((2023, 2), 28), ((2024, 2), 29), ((2023, 4), 30), ((2023, 12), 31), ((1900, 2), 28),
])
def test_days_in_month(args, expected):
    assert m.days_in_month(*args) == expected


@pytest.mark.parametrize("month", [0, 13])
def test_days_in_month_rejects(month):
    with pytest.raises(ValueError):
        m.days_in_month(2023, month)


@pytest.mark.parametrize("args, expected", [
    ((2023, 1, 1), 1), ((2023, 12, 31), 365), ((2024, 12, 31), 366), ((2023, 3, 1), 60), ((2024, 3, 1), 61),
    ((2023, 2, 5), 36),
])
def test_day_of_year(args, expected):
    assert m.day_of_year(*args) == expected


@pytest.mark.parametrize("args, expected", [
    ((2024, 1, 1), "Monday"), ((2000, 2, 29), "Tuesday"), ((2023, 12, 25), "Monday"), ((1969, 7, 20), "Sunday"),
    ((2024, 3, 16), "Saturday"), ((2021, 11, 5), "Friday"),
])
def test_weekday(args, expected):
    assert m.weekday(*args) == expected


@pytest.mark.parametrize("args, expected", [(("2024-02-29",), (2024, 2, 29)), (("1999-12-31",), (1999, 12, 31)), (("2023-01-01",), (2023, 1, 1))])
def test_parse_iso(args, expected):
    assert m.parse_iso(*args) == expected


@pytest.mark.parametrize("text", ["2023-02-29", "2023-13-01", "2023-1", "abcd-ef-gh", "2023-04-31", "2023-04-00"])
def test_parse_iso_rejects(text):
    with pytest.raises(ValueError):
        m.parse_iso(text)


@pytest.mark.parametrize("args, expected", [
    ((2023, 1, 30, 2), (2023, 2, 1)), ((2023, 12, 31, 1), (2024, 1, 1)), ((2024, 2, 28, 1), (2024, 2, 29)),
    ((2023, 2, 28, 1), (2023, 3, 1)), ((2023, 5, 5, 0), (2023, 5, 5)), ((2023, 1, 1, 365), (2024, 1, 1)),
])
def test_add_days(args, expected):
    assert m.add_days(*args) == expected


@pytest.mark.parametrize("args, expected", [((0,), "0:00:00"), ((59,), "0:00:59"), ((3661,), "1:01:01"), ((90000,), "25:00:00"), ((600,), "0:10:00")])
def test_format_duration(args, expected):
    assert m.format_duration(*args) == expected


@pytest.mark.parametrize("args, expected", [((1,), 1), ((3,), 1), ((4,), 2), ((9,), 3), ((10,), 4), ((12,), 4)])
def test_quarter(args, expected):
    assert m.quarter(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (((2000, 5, 10), (2020, 5, 10)), 20), (((2000, 5, 10), (2020, 5, 9)), 19), (((2000, 5, 10), (2020, 6, 1)), 20),
    (((2000, 12, 31), (2001, 1, 1)), 0), (((1990, 1, 1), (1990, 1, 1)), 0),
])
def test_age_on(args, expected):
    assert m.age_on(*args) == expected


@pytest.mark.parametrize("args, expected", [(("jan",), 1), (("December",), 12), (("MAY",), 5), (("sept",), 9)])
def test_month_name_to_number(args, expected):
    assert m.month_name_to_number(*args) == expected


def test_month_name_rejects():
    with pytest.raises(ValueError):
        m.month_name_to_number("Smarch")
