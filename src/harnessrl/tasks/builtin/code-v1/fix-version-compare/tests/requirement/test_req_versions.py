from versions import compare, latest


def test_numeric_components():
    assert compare("1.10", "1.9") == 1
    assert compare("2.0", "10.0") == -1


def test_missing_components_are_zero():
    assert compare("1.2", "1.2.0") == 0
    assert compare("1.2.1", "1.2") == 1


def test_latest():
    assert latest(["1.9", "1.10", "1.2"]) == "1.10"
