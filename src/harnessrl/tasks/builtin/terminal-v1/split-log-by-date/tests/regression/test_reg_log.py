from pathlib import Path


def test_source_kept():
    assert len(Path("/app/access.log").read_text().splitlines()) == 6
