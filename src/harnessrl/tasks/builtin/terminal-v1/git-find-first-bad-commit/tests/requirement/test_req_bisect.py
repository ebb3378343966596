import subprocess
from pathlib import Path


def git(*args):
    return subprocess.run(["git", "-C", "/app", *args], capture_output=True, text=True).stdout.strip()


def test_first_bad():
    expected = [ln.split()[0] for ln in git("log", "--format=%H %s").splitlines() if ln.endswith(" Step 11")][0]
    assert Path("/app/first_bad.txt").read_text().strip() == expected
