from vowels import count_vowels


def test_mixed_case():
    assert count_vowels("AbcdE") == 2


def test_upper_only():
    assert count_vowels("IOU") == 3
