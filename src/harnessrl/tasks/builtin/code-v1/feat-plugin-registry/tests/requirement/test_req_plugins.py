import pytest

import plugins  # noqa: F401
from plugins import registry


def test_shout_registered():
    assert registry.get("shout")("hi") == "HI!"
    assert registry.names() == ["reverse", "shout"]


def test_decorator_returns_function_and_rejects_duplicates():
    def f(x):
        return x

    assert registry.plugin("identity")(f) is f
    assert registry.get("identity") is f
    with pytest.raises(ValueError):
        registry.plugin("identity")(f)
