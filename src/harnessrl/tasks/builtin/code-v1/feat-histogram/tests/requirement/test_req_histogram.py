import pytest
from summary import histogram


def test_counts():
    assert histogram([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 5, 0, 10) == [2, 2, 2, 2, 3]


def test_out_of_range_ignored():
    assert histogram([-1, 0.5, 1.5, 2.5], 2, 0, 2) == [1, 1]


def test_validation():
    with pytest.raises(ValueError):
        histogram([1], 0, 0, 1)
    with pytest.raises(ValueError):
        histogram([1], 2, 1, 1)
