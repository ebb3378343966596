from kvparse import parse_pair


def test_spaces_removed():
    assert parse_pair("name = ada") == ("name", "ada")


def test_value_with_equals():
    assert parse_pair(" expr = a=b ") == ("expr", "a=b")
