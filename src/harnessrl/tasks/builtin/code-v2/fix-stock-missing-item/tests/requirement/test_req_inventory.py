from inventory import restock, stock


def test_unknown_is_zero():
    assert stock({"pen": 2}, "ink") == 0


def test_restock_new_item():
    assert restock({}, "cup", 3) == {"cup": 3}
