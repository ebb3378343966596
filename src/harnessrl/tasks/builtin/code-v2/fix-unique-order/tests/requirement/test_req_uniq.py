from uniq import unique


def test_order_kept():
    assert unique([3, 1, 3, 2, 1]) == [3, 1, 2]


def test_strings():
    assert unique(["b", "a", "b"]) == ["b", "a"]
