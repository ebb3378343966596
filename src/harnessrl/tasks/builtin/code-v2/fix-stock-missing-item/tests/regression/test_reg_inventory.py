from inventory import restock, stock


def test_known_items():
    assert stock({"pen": 2}, "pen") == 2
    assert restock({"pen": 2}, "pen", 1) == {"pen": 3}
