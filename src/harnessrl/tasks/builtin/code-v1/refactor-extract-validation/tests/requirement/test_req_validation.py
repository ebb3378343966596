import inspect

import accounts
from accounts import password_problems, validate_email


def test_validate_email():
    assert validate_email("a@b.io")
    for bad in ("ab.io", "a@@b.io", "@b.io", "a@bio", "a@.b.io", "a@b.io."):
        assert not validate_email(bad), bad


def test_password_problems():
    assert password_problems("abc") == ["too short", "no digit"]
    assert password_problems("12345678") == ["no letter"]
    assert password_problems("abcdefg1") == []


def test_register_uses_the_helpers():
    source = inspect.getsource(accounts.register)
    assert "validate_email(" in source and "password_problems(" in source
