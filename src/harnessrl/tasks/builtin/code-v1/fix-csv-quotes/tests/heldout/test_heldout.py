from records import load, parse_line


def test_other_quoting():
    assert parse_line('"a,b,c",2') == ["a,b,c", "2"]
    assert parse_line('x,"""q""",y') == ["x", '"q"', "y"]


def test_other_load():
    assert load('k,v\n1,"x, y, z"\n2,plain\n') == [{"k": "1", "v": "x, y, z"}, {"k": "2", "v": "plain"}]
