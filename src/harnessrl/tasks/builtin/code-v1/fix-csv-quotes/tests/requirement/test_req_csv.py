from records import load, parse_line


def test_quoted_comma():
    assert parse_line('1,"Smith, Jane",NY') == ["1", "Smith, Jane", "NY"]


def test_doubled_quote():
    assert parse_line('"say ""hi""",x') == ['say "hi"', "x"]


def test_load_with_quotes():
    rows = load('id,name\n7,"Doe, John"\n')
    assert rows == [{"id": "7", "name": "Doe, John"}]
