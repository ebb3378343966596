from uniq import duplicates


def test_duplicates():
    assert duplicates([1, 2, 1, 3, 2, 1]) == [1, 2]
