from pathlib import Path


def test_summary():
    assert Path("/app/summary.csv").read_text().splitlines() == [
        "category,total", "books,40.25", "games,90.25", "music,24.00"]
