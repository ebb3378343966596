import pytest
from inventory import Inventory


def test_add_and_count():
    inv = Inventory()
    inv.add("b", 2)
    inv.add("a")
    inv.add("b")
    assert inv.count("b") == 3 and inv.items() == ["a", "b"]


def test_add_validates():
    with pytest.raises(ValueError):
        Inventory().add("x", 0)
