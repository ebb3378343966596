from text_utils import slugify


def test_other_slugs():
    assert slugify("__Data & Science__") == "data-science"
    assert slugify("Rock'n'Roll 4 Ever!!") == "rock-n-roll-4-ever"
    assert slugify("...") == ""
