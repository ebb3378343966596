from text_utils import slugify, truncate


def test_simple_words():
    assert slugify("hello") == "hello"
    assert slugify("one two") == "one-two"


def test_truncate():
    assert truncate("abcdef", 4) == "abc…"
    assert truncate("abc", 4) == "abc"
