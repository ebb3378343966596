import pytest
from units import c_to_f, f_to_c


def test_existing():
    assert c_to_f(100) == pytest.approx(212)
    assert f_to_c(32) == pytest.approx(0)
