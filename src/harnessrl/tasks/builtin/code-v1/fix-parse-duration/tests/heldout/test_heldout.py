import pytest
from durations import format_duration, parse_duration


def test_other_units():
    assert parse_duration("3h") == 10800
    assert parse_duration("45m15s") == 2715


def test_other_round_trips():
    for seconds in (1, 600, 7201, 45296):
        assert parse_duration(format_duration(seconds)) == seconds


def test_other_garbage():
    with pytest.raises(ValueError):
        parse_duration("1h oops")
