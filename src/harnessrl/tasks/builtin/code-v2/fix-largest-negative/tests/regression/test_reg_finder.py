import pytest
from finder import largest


def test_positive():
    assert largest([3, 8, 1]) == 8


def test_empty():
    with pytest.raises(ValueError):
        largest([])
