import pytest
from temperature import to_fahrenheit


def test_body_temperature():
    assert to_fahrenheit(37) == pytest.approx(98.6)


def test_negative():
    assert to_fahrenheit(-40) == pytest.approx(-40.0)
    assert to_fahrenheit(-1) == pytest.approx(30.2)
