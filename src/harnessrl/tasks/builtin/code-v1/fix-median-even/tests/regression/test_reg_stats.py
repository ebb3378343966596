import pytest
from stats import mean, median, mode


def test_odd_median_unchanged():
    assert median([5, 1, 3]) == 3


def test_mean_and_mode():
    assert mean([1, 2, 3, 4]) == 2.5
    assert mode([3, 1, 3, 1, 2]) == 1


def test_empty_raises():
    with pytest.raises(ValueError):
        median([])
