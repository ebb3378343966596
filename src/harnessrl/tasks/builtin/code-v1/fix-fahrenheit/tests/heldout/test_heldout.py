import pytest
from temperature import to_fahrenheit


def test_other_temperatures():
    assert to_fahrenheit(100) == pytest.approx(212.0)
    assert to_fahrenheit(-10) == pytest.approx(14.0)
    assert to_fahrenheit(20) == pytest.approx(68.0)
