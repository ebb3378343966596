from words import reverse_words


def test_other_sentences():
    assert reverse_words("hello world") == "world hello"
    assert reverse_words("solo") == "solo"
    assert reverse_words("") == ""
