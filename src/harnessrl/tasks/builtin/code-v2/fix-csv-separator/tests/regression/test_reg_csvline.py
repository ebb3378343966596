from csvline import from_csv_line


def test_parse():
    assert from_csv_line("1,2,3") == ["1", "2", "3"]
