import pytest
from roman import to_roman


def test_additive_values():
    assert [to_roman(n) for n in (1, 3, 5, 8, 20, 2023)] == ["I", "III", "V", "VIII", "XX", "MMXXIII"]


def test_range():
    for bad in (0, 4000, -1):
        with pytest.raises(ValueError):
            to_roman(bad)
