from csvline import to_csv_line


def test_other_rows():
    assert to_csv_line([True, None]) == "True,None"
    assert to_csv_line(["only"]) == "only"
    assert to_csv_line([]) == ""
