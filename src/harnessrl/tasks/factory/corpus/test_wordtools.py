import pytest

import wordtools as m


@pytest.mark.parametrize("args, expected", [(("Hello, World!",), ["hello", "world"]), (("It's 3 o'clock",), ["it's", "o'clock"]), (("",), [])])
def test_words(args, expected):
    assert m.words(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("the cat and the hat",), {"cat": 1, "hat": 1}), (("Go go GO",), {"go": 3}), (("",), {}), (("of a to",), {}),
])
def test_word_frequencies(args, expected):
    assert m.word_frequencies(*args) == expected


@pytest.mark.parametrize("args, expected", [(("a bb ccc dd",), "ccc"), (("one two six",), "one"), (("",), ""), (("hi!",), "hi")])
def test_longest_word(args, expected):
    assert m.longest_word(*args) == expected


@pytest.mark.parametrize("args, expected", [(("portable network graphics",), "PNG"), (("Complementary metal-oxide semiconductor",), "CMOS"), (("x",), "X")])
def test_acronym(args, expected):
    assert m.acronym(*args) == expected


@pytest.mark.parametrize("args, expected", [(("listen", "silent"), True), (("Dormitory", "dirty room!"), True), (("abc", "abd"), False), (("aab", "ab"), False)])
def test_is_anagram(args, expected):
    assert m.is_anagram(*args) == expected


@pytest.mark.parametrize("args, expected", [(("pig",), "igpay"), (("apple",), "appleway"), (("string",), "ingstray"), (("rhythm",), "rhythmay")])
def test_pig_latin(args, expected):
    assert m.pig_latin(*args) == expected


@pytest.mark.parametrize("args, expected", [(("One. Two! Three?",), 3), (("Wait...",), 1), (("no end",), 0), (("A. B.",), 2)])
def test_sentence_count(args, expected):
    assert m.sentence_count(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("the lord of the rings",), "The Lord of the Rings"), (("a tale of two cities",), "A Tale of Two Cities"),
    (("what it is made of",), "What It Is Made Of"), (("",), ""),
])
def test_title_case(args, expected):
    assert m.title_case(*args) == expected


@pytest.mark.parametrize("args, expected", [(("Ada King Lovelace",), "A.K.L."), (("alan turing",), "A.T."), (("",), "")])
def test_initials(args, expected):
    assert m.initials(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (("darn it, DARN", {"darn"}), "**** it, ****"), (("darning", {"darn"}), "darning"), (("ok", set()), "ok"),
])
def test_mask_words(args, expected):
    assert m.mask_words(*args) == expected
