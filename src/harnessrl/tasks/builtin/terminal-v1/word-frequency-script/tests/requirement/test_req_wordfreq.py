import os
import subprocess


def run(*args):
    return subprocess.run(["/app/wordfreq", *args], capture_output=True, text=True)


def test_top_words():
    assert os.access("/app/wordfreq", os.X_OK)
    r = run("3", "/app/texts/a.txt", "/app/texts/b.txt")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["3 a", "3 cat", "3 the"]


def test_usage():
    r = run("x", "/app/texts/a.txt")
    assert r.returncode == 2 and "usage" in r.stderr.lower()
    assert run().returncode == 2
