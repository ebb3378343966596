from pathlib import Path

D = Path("/app/by-day")


def test_files():
    assert sorted(p.name for p in D.iterdir()) == ["2024-05-01.log", "2024-05-02.log", "2024-05-03.log", "unknown.log"]
    assert (D / "2024-05-01.log").read_text() == "2024-05-01T10:00:00 GET /\n2024-05-01T12:00:00 POST /b\n"
    assert (D / "2024-05-02.log").read_text() == "2024-05-02T11:00:00 GET /a\n2024-05-02T23:59:59 GET /d\n"
    assert (D / "unknown.log").read_text() == "garbage line\n"
