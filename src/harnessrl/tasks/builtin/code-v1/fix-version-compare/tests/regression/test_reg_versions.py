from versions import compare, latest


def test_simple():
    assert compare("1.0", "1.0") == 0
    assert compare("1.1", "1.2") == -1
    assert compare("3.4", "3.3") == 1


def test_latest_single():
    assert latest(["0.1"]) == "0.1"
