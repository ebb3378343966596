import pytest
from inventory import Inventory, OutOfStock


def test_remove_default_one():
    inv = Inventory()
    inv.add("kiwi", 3)
    inv.remove("kiwi")
    assert inv.count("kiwi") == 2


def test_other_failures():
    inv = Inventory()
    inv.add("lime", 4)
    with pytest.raises(OutOfStock):
        inv.remove("lime", 5)
    with pytest.raises(ValueError):
        inv.remove("lime", -2)
    assert inv.count("lime") == 4
