from pal import is_palindrome, longest_word


def test_plain():
    assert is_palindrome("abba")
    assert not is_palindrome("abc")
    assert longest_word(["a", "abc", "ab"]) == "abc"
