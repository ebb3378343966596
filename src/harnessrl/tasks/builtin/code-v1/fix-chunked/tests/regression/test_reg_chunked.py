import pytest
from batching import chunked


def test_exact_multiple_and_empty():
    assert chunked([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]
    assert chunked([], 3) == []


def test_bad_size():
    with pytest.raises(ValueError):
        chunked([1], 0)
