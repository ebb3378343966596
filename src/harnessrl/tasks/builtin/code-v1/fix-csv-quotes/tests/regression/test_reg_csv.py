from records import load, parse_line


def test_simple_line():
    assert parse_line("a,b,c\n") == ["a", "b", "c"]


def test_load_simple():
    assert load("x,y\n1,2\n3,4\n") == [{"x": "1", "y": "2"}, {"x": "3", "y": "4"}]
