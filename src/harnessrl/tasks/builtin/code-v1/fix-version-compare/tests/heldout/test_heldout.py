from versions import compare, latest


def test_other_versions():
    assert compare("0.10.0", "0.9.9") == 1
    assert compare("3", "3.0.0") == 0
    assert compare("1.0.1", "1.0.10") == -1
    assert latest(["2.9", "2.10.1", "2.10"]) == "2.10.1"
