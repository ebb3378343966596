from tags import add_tag, format_tags


def test_appends_in_place_to_given_list():
    mine = ["old"]
    out = add_tag(" New ", mine)
    assert out is mine and mine == ["old", "new"]


def test_no_duplicates_and_format():
    mine = add_tag("b", ["a"])
    add_tag("B", mine)
    assert format_tags(mine) == "#a #b"
