from kvparse import parse_lines, parse_pair


def test_no_spaces():
    assert parse_pair("x=1") == ("x", "1")
    assert parse_lines("a=1\nnoise\nb=2") == {"a": "1", "b": "2"}
