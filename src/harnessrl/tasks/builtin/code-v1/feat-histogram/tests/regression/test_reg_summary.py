import pytest
from summary import minmax, spread


def test_minmax_spread():
    assert minmax([3, 1, 2]) == (1, 3)
    assert spread([5, 9]) == 4
    with pytest.raises(ValueError):
        minmax([])
