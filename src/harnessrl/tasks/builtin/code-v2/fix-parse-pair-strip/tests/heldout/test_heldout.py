from kvparse import parse_lines


def test_lines_with_spaces():
    assert parse_lines("host = example\n  port=  80") == {"host": "example", "port": "80"}
