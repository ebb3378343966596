from config_loader import DEFAULTS, merged


def test_merged_ignores_unknown():
    assert merged(DEFAULTS, {"port": 1, "nope": 2}) == {**DEFAULTS, "port": 1}
    assert DEFAULTS["port"] == 8080
