import os
import subprocess
from pathlib import Path

EXPECTED = {
    "2024-05-01.log": "2024-05-01T10:00:00 GET /\n2024-05-01T12:00:00 POST /b\n",
    "2024-05-02.log": "2024-05-02T11:00:00 GET /a\n2024-05-02T23:59:59 GET /d\n",
    "2024-05-03.log": "2024-05-03T00:00:01 GET /c\n",
    "unknown.log": "garbage line\n",
}


def contents(folder):
    return {p.name: p.read_text() for p in folder.iterdir()}


def test_files():
    assert contents(Path("/app/by-day")) == EXPECTED


def test_the_script_on_the_log(tmp_path):
    assert os.access("/app/split_by_day", os.X_OK)
    r = subprocess.run(["/app/split_by_day", "/app/access.log", str(tmp_path / "days")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert contents(tmp_path / "days") == EXPECTED
