from formatting import wrap


def test_default_wrapping():
    assert wrap("aa bb cc", 5) == ["aa bb", "cc"]
    assert wrap("", 5) == []


def test_long_word_alone():
    assert wrap("tiny enormousword x", 6) == ["tiny", "enormousword", "x"]
