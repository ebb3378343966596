import pytest
from config_loader import DEFAULTS, from_env


def test_typed_overrides():
    env = {"APP_PORT": "9000", "APP_DEBUG": "Yes", "APP_RATIO": "0.25", "APP_HOST": "db", "OTHER": "x"}
    assert from_env(DEFAULTS, env) == {"host": "db", "port": 9000, "debug": True, "ratio": 0.25}


def test_prefix_and_untouched_defaults():
    assert from_env(DEFAULTS, {"SVC_PORT": "1"}, prefix="SVC_")["port"] == 1
    assert from_env(DEFAULTS, {}) == DEFAULTS
    assert from_env(DEFAULTS, {"APP_DEBUG": "0"})["debug"] is False


def test_bad_value_names_variable():
    with pytest.raises(ValueError, match="APP_PORT"):
        from_env(DEFAULTS, {"APP_PORT": "eighty"})
    with pytest.raises(ValueError, match="APP_DEBUG"):
        from_env(DEFAULTS, {"APP_DEBUG": "maybe"})
