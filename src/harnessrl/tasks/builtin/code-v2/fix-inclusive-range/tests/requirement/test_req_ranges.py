from ranges import inclusive_range


def test_includes_end():
    assert inclusive_range(1, 3) == [1, 2, 3]


def test_single():
    assert inclusive_range(5, 5) == [5]
