import os
import subprocess
from pathlib import Path

ORIGINAL = "ann@x.io\nbob@y.io\nAnn@x.io\ncy@z.io\nbob@y.io\nDee@w.io\ncy@z.io\n"
DEDUPED = ["ann@x.io", "bob@y.io", "cy@z.io", "Dee@w.io"]


def test_deduped():
    assert Path("/app/emails.txt").read_text().splitlines() == DEDUPED


def test_the_script_on_a_copy_of_the_list(tmp_path):
    assert os.access("/app/dedupe", os.X_OK)
    copy = tmp_path / "emails.txt"
    copy.write_text(ORIGINAL)
    r = subprocess.run(["/app/dedupe", str(copy)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert copy.read_text().splitlines() == DEDUPED
