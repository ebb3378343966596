from batching import batch_sums, chunked


def test_other_chunks():
    assert chunked(list("abcdefg"), 3) == [["a", "b", "c"], ["d", "e", "f"], ["g"]]
    assert chunked([9], 1) == [[9]]
    assert batch_sums([5, 5, 5, 5, 1], 4) == [20, 1]
