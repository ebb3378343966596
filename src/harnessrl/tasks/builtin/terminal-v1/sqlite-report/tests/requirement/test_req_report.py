from pathlib import Path


def test_report():
    assert Path("/app/top_customers.txt").read_text().splitlines() == ["Bob\t100.00", "Dee\t60.75", "Ann\t50.75"]
