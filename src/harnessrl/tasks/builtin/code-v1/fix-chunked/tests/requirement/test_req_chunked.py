from batching import batch_sums, chunked


def test_partial_last_chunk():
    assert chunked([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]


def test_shorter_than_size():
    assert chunked([1, 2], 5) == [[1, 2]]
    assert batch_sums([1, 2, 3], 2) == [3, 3]
