from pathlib import Path


def test_input_untouched():
    lines = Path("/app/sales.csv").read_text().splitlines()
    assert lines[0] == "date,region,category,amount" and len(lines) == 9
