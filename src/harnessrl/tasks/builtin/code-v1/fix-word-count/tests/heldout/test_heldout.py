from words import top_words, word_count


def test_other_texts():
    assert word_count("It's IT, it's. Its?") == {"it's": 2, "it": 1, "its": 1}
    assert top_words("z Z z. y Y, x", 2) == ["z", "y"]
