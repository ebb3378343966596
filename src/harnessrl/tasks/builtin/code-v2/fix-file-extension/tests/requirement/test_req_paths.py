from paths import extension


def test_two_dots():
    assert extension("archive.tar.gz") == "gz"
