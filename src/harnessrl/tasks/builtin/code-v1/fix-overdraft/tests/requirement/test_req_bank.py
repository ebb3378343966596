import pytest
from bank import Account, InsufficientFunds


def test_overdraft_refused():
    acct = Account("ann", 50)
    with pytest.raises(InsufficientFunds):
        acct.withdraw(80)
    assert acct.balance == 50


def test_non_positive_refused():
    acct = Account("ann", 50)
    for bad in (0, -5):
        with pytest.raises(ValueError):
            acct.withdraw(bad)
    assert acct.balance == 50
