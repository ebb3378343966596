from words import word_count


def test_word_count():
    assert word_count("the quick fox") == 3
    assert word_count("") == 0
