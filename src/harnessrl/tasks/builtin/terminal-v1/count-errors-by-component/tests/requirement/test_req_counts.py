import os
import subprocess
from pathlib import Path

EXPECTED = ["db 3", "auth 2", "api 1", "cache 1"]


def test_counts_file():
    assert Path("/app/error_counts.txt").read_text().splitlines() == EXPECTED


def test_the_script_on_the_log():
    assert os.access("/app/error_counts", os.X_OK)
    r = subprocess.run(["/app/error_counts", "/app/logs/app.log"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == EXPECTED
