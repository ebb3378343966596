import pytest
from durations import format_duration, parse_duration


def test_several_units():
    assert parse_duration("1h30m") == 5400
    assert parse_duration("2h5m10s") == 7510


def test_round_trip():
    for seconds in (59, 61, 3599, 3661, 86399):
        assert parse_duration(format_duration(seconds)) == seconds


def test_trailing_garbage_rejected():
    with pytest.raises(ValueError):
        parse_duration("5m later")
