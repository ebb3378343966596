import pytest
from inventory import Inventory, OutOfStock


def test_remove_some_and_all():
    inv = Inventory()
    inv.add("apple", 5)
    inv.remove("apple", 2)
    assert inv.count("apple") == 3
    inv.remove("apple", 3)
    assert inv.count("apple") == 0 and inv.items() == []


def test_out_of_stock_changes_nothing():
    inv = Inventory()
    inv.add("pear", 1)
    with pytest.raises(OutOfStock):
        inv.remove("pear", 2)
    with pytest.raises(OutOfStock):
        inv.remove("plum")
    assert inv.count("pear") == 1


def test_bad_qty():
    inv = Inventory()
    inv.add("fig")
    with pytest.raises(ValueError):
        inv.remove("fig", 0)
