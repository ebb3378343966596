from pal import is_palindrome


def test_mixed_case():
    assert is_palindrome("Level")
    assert is_palindrome("RaceCar")
