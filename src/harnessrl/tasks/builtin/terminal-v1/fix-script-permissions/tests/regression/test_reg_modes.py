import stat
from pathlib import Path


def test_others_unchanged():
    assert stat.S_IMODE(Path("/app/scripts/notes.txt").stat().st_mode) == 0o640
    assert Path("/app/secret.key").read_text() == "KEY\n"
