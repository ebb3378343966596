import subprocess
from pathlib import Path


def git(*args):
    return subprocess.run(["git", "-C", "/app", *args], capture_output=True, text=True).stdout


def test_resolved_and_committed():
    assert Path("/app/config.ini").read_text() == "[server]\nport = 8080\ntimeout = 30\n\n[log]\nlevel = info\n"
    parents = git("log", "-1", "--format=%P").split()
    assert len(parents) == 2
    assert git("status", "--porcelain") == ""
