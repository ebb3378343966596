import pytest
from temperature import to_fahrenheit


def test_other_temperatures():
    assert to_fahrenheit(21) == pytest.approx(69.8)
    assert to_fahrenheit(-7) == pytest.approx(19.4)
    assert to_fahrenheit(100) == pytest.approx(212.0)
