from words import top_words, word_count


def test_plain_lowercase_text():
    assert word_count("the cat the hat") == {"the": 2, "cat": 1, "hat": 1}


def test_top_words_ties_alphabetical():
    assert top_words("b a c a b", 3) == ["a", "b", "c"]


def test_empty():
    assert word_count("") == {}
