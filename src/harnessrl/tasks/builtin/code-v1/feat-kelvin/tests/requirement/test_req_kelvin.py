import pytest
from units import from_kelvin, to_kelvin


def test_conversions():
    assert to_kelvin(0) == pytest.approx(273.15)
    assert from_kelvin(373.15) == pytest.approx(100)
    assert from_kelvin(to_kelvin(-40)) == pytest.approx(-40)


def test_absolute_zero():
    assert to_kelvin(-273.15) == pytest.approx(0)
    with pytest.raises(ValueError):
        to_kelvin(-300)
    with pytest.raises(ValueError):
        from_kelvin(-1)
