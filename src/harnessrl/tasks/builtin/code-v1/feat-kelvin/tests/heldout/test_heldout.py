import pytest
from units import from_kelvin, to_kelvin


def test_other_conversions():
    assert to_kelvin(100) == pytest.approx(373.15)
    assert from_kelvin(0) == pytest.approx(-273.15)
    assert to_kelvin(from_kelvin(500)) == pytest.approx(500)


def test_other_limits():
    with pytest.raises(ValueError):
        to_kelvin(-274)
    with pytest.raises(ValueError):
        from_kelvin(-0.5)
