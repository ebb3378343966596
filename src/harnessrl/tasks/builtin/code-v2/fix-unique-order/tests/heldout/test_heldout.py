from uniq import unique


def test_other_lists():
    assert unique([9, 8, 7, 9, 8]) == [9, 8, 7]
    assert unique(["z", "y", "x", "y"]) == ["z", "y", "x"]
    assert unique([]) == []
