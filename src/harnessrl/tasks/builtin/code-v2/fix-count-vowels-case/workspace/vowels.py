VOWELS = "aeiou"


def count_vowels(s):
    return sum(1 for c in s if c in VOWELS)


def has_vowel(s):
    return count_vowels(s) > 0
