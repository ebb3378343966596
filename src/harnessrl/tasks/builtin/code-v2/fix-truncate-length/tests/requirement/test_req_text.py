from text import truncate


def test_truncate():
    assert truncate("abcdef", 3) == "abc"
