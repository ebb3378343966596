from ranges import inclusive_range


def test_other_ranges():
    assert inclusive_range(-2, 1) == [-2, -1, 0, 1]
    assert inclusive_range(3, 2) == []
    assert len(inclusive_range(0, 99)) == 100
