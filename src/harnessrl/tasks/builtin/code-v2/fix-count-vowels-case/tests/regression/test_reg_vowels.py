from vowels import count_vowels, has_vowel


def test_lower():
    assert count_vowels("banana") == 3
    assert not has_vowel("rhythm")
