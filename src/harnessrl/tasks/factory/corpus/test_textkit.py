import pytest

import textkit as m


@pytest.mark.parametrize("args, expected", [
    (("Hello World",), "hello-world"),
    (("  Many   spaces  ",), "many-spaces"),
    (("Already-a-slug",), "already-a-slug"),
    (("C++ & Python 3",), "c-python-3"),
    (("",), ""),
])
def test_slugify(args, expected):
    assert m.slugify(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("banana",), 3), (("AEIOU",), 5), (("rhythm",), 0), (("",), 0), (("Queue",), 4),
])
def test_count_vowels(args, expected):
    assert m.count_vowels(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("hello world",), "Hello World"), (("a b c",), "A B C"), (("",), ""), (("iPhone case",), "IPhone Case"),
    (("two  spaces",), "Two  Spaces"),
])
def test_capitalize_words(args, expected):
    assert m.capitalize_words(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("hello", 10), "hello"), (("hello", 5), "hello"), (("hello world", 8), "hello..."),
    (("hello", 2), ".."), (("abcdef", 4, "~"), "abc~"), (("abc", 3, "!!"), "abc"),
])
def test_truncate(args, expected):
    assert m.truncate(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("Racecar",), True), (("A man, a plan, a canal: Panama",), True), (("hello",), False), (("",), True),
    (("ab",), False),
])
def test_is_palindrome(args, expected):
    assert m.is_palindrome(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("one two three",), "three two one"), (("  padded  words ",), "words padded"), (("solo",), "solo"), (("",), ""),
])
def test_reverse_words(args, expected):
    assert m.reverse_words(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("7", 3), "  7"), (("42", 5, "0"), "00042"), (("long", 2), "long"), (("abc", 3), "abc"), (("", 2, "*"), "**"),
])
def test_pad_left(args, expected):
    assert m.pad_left(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("flower", "flow"), "flow"), (("dog", "car"), ""), (("same", "same"), "same"), (("", "x"), ""),
    (("interview", "internet"), "inter"),
])
def test_common_prefix(args, expected):
    assert m.common_prefix(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("aab",), {"a": 2, "b": 1}), (("a a",), {"a": 2}), (("",), {}), (("xyzx",), {"x": 2, "y": 1, "z": 1}),
])
def test_char_histogram(args, expected):
    assert m.char_histogram(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("parseHttpHeader",), "parse_http_header"), (("Name",), "name"), (("x",), "x"), (("getX",), "get_x"),
    (("already_snake",), "already_snake"),
])
def test_camel_to_snake(args, expected):
    assert m.camel_to_snake(*args) == expected
