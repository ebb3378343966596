from vowels import count_vowels, has_vowel


def test_more_words():
    assert count_vowels("ApplE pIE") == 4
    assert has_vowel("XYZA")
    assert count_vowels("") == 0
