from text import truncate


def test_other_lengths():
    assert truncate("hello world", 5) == "hello"
    assert truncate("xy", 1) == "x"
    assert truncate("abc", 0) == ""
