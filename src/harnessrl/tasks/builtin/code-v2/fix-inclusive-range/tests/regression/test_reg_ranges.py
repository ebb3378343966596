from ranges import exclusive_range


def test_exclusive():
    assert exclusive_range(1, 3) == [1, 2]
    assert exclusive_range(4, 4) == []
