import pytest
import plugins  # noqa: F401
from plugins import registry


def test_shout_other_text():
    assert registry.get("shout")("ok go") == "OK GO!"


def test_decorator_other_names():
    @registry.plugin("double")
    def double(x):
        return x * 2

    assert registry.get("double")(4) == 8
    assert "double" in registry.names() and registry.names() == sorted(registry.names())
    with pytest.raises(ValueError):
        registry.plugin("double")(lambda x: x)
