from pathlib import Path


def test_counts_file():
    lines = Path("/app/error_counts.txt").read_text().splitlines()
    assert lines == ["db 3", "auth 2", "api 1", "cache 1"]
