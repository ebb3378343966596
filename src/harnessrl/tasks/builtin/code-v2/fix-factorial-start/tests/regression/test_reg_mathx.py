import pytest
from mathx import factorial, gcd


def test_gcd():
    assert gcd(12, 18) == 6


def test_negative_factorial():
    with pytest.raises(ValueError):
        factorial(-1)
