import pytest

import accounts as m


def test_deposit():
    a = m.Account("ann")
    a.deposit(100)
    a.deposit(50)
    assert a.balance == 150
    assert a.history == [("deposit", 100), ("deposit", 50)]


@pytest.mark.parametrize("amount", [0, -5])
def test_deposit_rejects_non_positive(amount):
    a = m.Account("ann", 10)
    with pytest.raises(ValueError):
        a.deposit(amount)
    assert a.balance == 10


def test_withdraw():
    a = m.Account("bob", 100)
    a.withdraw(30)
    assert a.balance == 70
    a.withdraw(70)
    assert a.balance == 0
    assert a.history == [("withdraw", 30), ("withdraw", 70)]


@pytest.mark.parametrize("amount", [0, -1, 101])
def test_withdraw_rejects(amount):
    a = m.Account("bob", 100)
    with pytest.raises(ValueError):
        a.withdraw(amount)
    assert a.balance == 100 and a.history == []


def test_transfer():
    a, b = m.Account("a", 100), m.Account("b", 5)
    a.transfer(b, 40)
    assert (a.balance, b.balance) == (60, 45)
    with pytest.raises(ValueError):
        a.transfer(b, 1000)
    assert (a.balance, b.balance) == (60, 45)


def test_statement():
    a = m.Account("c")
    a.deposit(100)
    a.withdraw(30)
    assert a.statement() == "deposit 100\nwithdraw 30\nbalance 70"
    assert m.Account("d", 7).statement() == "balance 7"


def test_inventory_add_and_take():
    inv = m.Inventory()
    inv.add("bolt", 10)
    inv.add("bolt", 5)
    assert inv.take("bolt", 4) is True
    assert inv.stock["bolt"] == 11
    assert inv.take("bolt", 11) is True
    assert inv.stock["bolt"] == 0


def test_inventory_take_too_many():
    inv = m.Inventory()
    inv.add("nut", 3)
    assert inv.take("nut", 4) is False
    assert inv.stock["nut"] == 3
    assert inv.take("washer", 1) is False


def test_inventory_to_reorder():
    inv = m.Inventory(reorder_level=2)
    for name, qty in (("a", 1), ("b", 2), ("c", 3), ("d", 0)):
        inv.add(name, qty)
    assert inv.to_reorder() == ["a", "b", "d"]


def test_inventory_total_units():
    inv = m.Inventory()
    assert inv.total_units() == 0
    inv.add("x", 4)
    inv.add("y", 6)
    assert inv.total_units() == 10
