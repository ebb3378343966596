from logparse import count_levels, read_records


def test_records_and_counts():
    lines = ["INFO started", "", "# comment", "ERROR disk full", "INFO done"]
    assert list(read_records(lines))[1] == {"level": "ERROR", "message": "disk full"}
    assert count_levels(lines) == {"INFO": 2, "ERROR": 1}
