from text import shout, truncate


def test_short_untouched():
    assert truncate("ab", 5) == "ab"
    assert shout("hi") == "HI!"
