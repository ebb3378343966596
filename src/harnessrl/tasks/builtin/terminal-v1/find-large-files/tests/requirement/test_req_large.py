import os
import subprocess
from pathlib import Path

LARGE = ["a/b/huge video.mp4", "a/big.bin", "c/just-over.bin"]


def run(*args):
    return subprocess.run(["/app/find_large", *args], capture_output=True, text=True)


def test_list():
    assert Path("/app/large.txt").read_text().splitlines() == LARGE


def test_script_on_the_data():
    assert os.access("/app/find_large", os.X_OK)
    r = run("/app/data", "1048576")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == LARGE
    assert run("/app/data", "2000000").stdout.splitlines() == ["a/b/huge video.mp4"]


def test_usage():
    r = run("/app/data", "1M")
    assert r.returncode == 2 and "usage" in r.stderr.lower()
    assert run("/app/data").returncode == 2
