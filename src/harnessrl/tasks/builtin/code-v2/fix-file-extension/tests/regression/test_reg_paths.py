from paths import extension, stem


def test_simple():
    assert extension("notes.txt") == "txt"
    assert extension("README") == ""
    assert stem("archive.tar.gz") == "archive.tar"
