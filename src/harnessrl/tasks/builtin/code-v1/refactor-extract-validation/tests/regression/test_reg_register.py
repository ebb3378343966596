import pytest
from accounts import USERS, register


def test_register_and_errors():
    USERS.clear()
    assert register("x@y.com", "secret123") == "x@y.com"
    with pytest.raises(ValueError, match="already registered"):
        register("x@y.com", "secret123")
    with pytest.raises(ValueError, match="invalid email"):
        register("nope", "secret123")
    with pytest.raises(ValueError, match="weak password: too short, no digit"):
        register("a@b.co", "abc")
