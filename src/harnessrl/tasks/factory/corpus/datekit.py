"""Calendar helpers on plain integers (no datetime)."""

DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def is_leap(year):
    """Gregorian leap year: divisible by 4, except centuries not divisible by 400."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    """Days in `month` (1-12) of `year`."""
    if month < 1 or month > 12:
        raise ValueError("month must be 1..12")
    if month == 2 and is_leap(year):
        return 29
    return DAYS_IN_MONTH[month - 1]


def day_of_year(year, month, day):
    """1 for January 1st, 365 (or 366) for December 31st."""
    total = day
    for m in range(1, month):
        total += days_in_month(year, m)
    return total


def weekday(year, month, day):
    """The weekday name of a date (Zeller's congruence)."""
    if month < 3:
        month += 12
        year -= 1
    k = year % 100
    j = year // 100
    h = (day + 13 * (month + 1) // 5 + k + k // 4 + j // 4 + 5 * j) % 7
    return WEEKDAYS[(h + 5) % 7]


def parse_iso(text):
    """(year, month, day) from "YYYY-MM-DD"; ValueError for anything else or an impossible date."""
    parts = text.split("-")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a date: {text!r}")
    year, month, day = (int(p) for p in parts)
    if day < 1 or day > days_in_month(year, month):
        raise ValueError(f"no such day: {text!r}")
    return year, month, day


def add_days(year, month, day, n):
    """The date `n` >= 0 days after the given one, as (year, month, day)."""
    for _ in range(n):
        day += 1
        if day > days_in_month(year, month):
            day = 1
            month += 1
            if month > 12:
                month = 1
                year += 1
    return year, month, day


def format_duration(seconds):
    """Seconds as "H:MM:SS" (hours unpadded, may exceed 24)."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def quarter(month):
    """The quarter (1-4) of a month (1-12)."""
    return (month - 1) // 3 + 1


def age_on(birth, today):
    """Whole years between two (year, month, day) dates: birthdays count from the day itself."""
    years = today[0] - birth[0]
    if (today[1], today[2]) < (birth[1], birth[2]):
        years -= 1
    return years


def month_name_to_number(name):
    """1 for "jan"/"January" (any case, first three letters decide), ValueError otherwise."""
    names = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    key = name[:3].lower()
    if key not in names:
        raise ValueError(f"not a month: {name!r}")
    return names.index(key) + 1
