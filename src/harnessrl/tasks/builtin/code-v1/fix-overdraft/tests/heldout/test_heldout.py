import pytest
from bank import Account, InsufficientFunds


def test_other_overdrafts():
    acct = Account("bo", 10)
    acct.withdraw(10)
    assert acct.balance == 0
    with pytest.raises(InsufficientFunds):
        acct.withdraw(1)
    with pytest.raises(ValueError):
        acct.withdraw(-0.5)
    assert acct.balance == 0
