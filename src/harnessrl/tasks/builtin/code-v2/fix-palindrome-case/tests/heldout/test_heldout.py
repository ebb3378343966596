from pal import is_palindrome


def test_other_words():
    assert is_palindrome("Noon")
    assert is_palindrome("AbCbA")
    assert not is_palindrome("Abca")
