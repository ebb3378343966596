from words import top_words, word_count


def test_case_and_punctuation():
    assert word_count("Hello, hello! World.") == {"hello": 2, "world": 1}


def test_apostrophes_kept():
    assert word_count("Don't stop; don't!") == {"don't": 2, "stop": 1}


def test_top_words_uses_normalised_counts():
    assert top_words("B b, a. A! a", 2) == ["a", "b"]
