import pytest
from averages import mean, total


def test_total():
    assert total([1, 2, 3]) == 6


def test_empty_mean_raises():
    with pytest.raises(ValueError):
        mean([])
