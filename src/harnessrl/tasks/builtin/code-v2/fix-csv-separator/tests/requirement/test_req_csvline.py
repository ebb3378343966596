from csvline import from_csv_line, to_csv_line


def test_comma():
    assert to_csv_line(["a", 1, 2.5]) == "a,1,2.5"


def test_round_trip():
    assert from_csv_line(to_csv_line(["x", "y"])) == ["x", "y"]
