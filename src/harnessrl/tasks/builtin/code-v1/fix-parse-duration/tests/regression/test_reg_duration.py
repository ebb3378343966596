import pytest
from durations import format_duration, parse_duration


def test_single_units():
    assert parse_duration("45s") == 45
    assert parse_duration(" 2m ") == 120


def test_invalid():
    for bad in ("", "abc", "5x"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_format():
    assert format_duration(3725) == "1h2m5s"
    assert format_duration(0) == "0s"
