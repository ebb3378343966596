import plugins  # noqa: F401
from plugins import registry


def test_builtin_reverse():
    assert registry.get("reverse")("abc") == "cba"
