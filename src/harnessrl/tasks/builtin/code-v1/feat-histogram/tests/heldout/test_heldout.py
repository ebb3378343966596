import pytest
from summary import histogram


def test_other_counts():
    assert histogram([1, 2, 2, 3, 3, 3], 3, 1, 4) == [1, 2, 3]
    assert histogram([], 4, 0, 1) == [0, 0, 0, 0]
    assert histogram([0, 100, 50], 2, 0, 100) == [1, 2]


def test_other_validation():
    with pytest.raises(ValueError):
        histogram([1], -1, 0, 5)
    with pytest.raises(ValueError):
        histogram([1], 3, 5, 2)
