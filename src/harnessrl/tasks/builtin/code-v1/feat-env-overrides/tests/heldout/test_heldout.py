import pytest
from config_loader import DEFAULTS, from_env


def test_other_overrides():
    got = from_env(DEFAULTS, {"CFG_PORT": "1234", "CFG_DEBUG": "true", "CFG_RATIO": "3.5"}, prefix="CFG_")
    assert got == {**DEFAULTS, "port": 1234, "debug": True, "ratio": 3.5}
    assert from_env(DEFAULTS, {"APP_DEBUG": "no", "APP_HOST": "cache"})["host"] == "cache"


def test_other_bad_values():
    with pytest.raises(ValueError, match="APP_RATIO"):
        from_env(DEFAULTS, {"APP_RATIO": "half"})
