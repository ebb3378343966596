import pytest
from bank import Account


def test_deposit_and_withdraw():
    acct = Account("bob")
    acct.deposit(100)
    assert acct.withdraw(30) == 70
    assert acct.withdraw(70) == 0


def test_deposit_validation():
    with pytest.raises(ValueError):
        Account("bob").deposit(0)
