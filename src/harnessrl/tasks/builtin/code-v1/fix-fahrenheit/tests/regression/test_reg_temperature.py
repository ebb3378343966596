import pytest
from temperature import describe, to_celsius, to_fahrenheit


def test_boiling_and_freezing():
    assert to_fahrenheit(100) == 212
    assert to_fahrenheit(0) == 32


def test_to_celsius_and_describe():
    assert to_celsius(212) == pytest.approx(100)
    assert [describe(c) for c in (-5, 10, 25, 35)] == ["freezing", "cold", "warm", "hot"]
