from pathlib import Path


def test_deduped():
    assert Path("/app/emails.txt").read_text().splitlines() == ["ann@x.io", "bob@y.io", "cy@z.io", "Dee@w.io"]
