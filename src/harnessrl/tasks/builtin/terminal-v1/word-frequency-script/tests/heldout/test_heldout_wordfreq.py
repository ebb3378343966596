import subprocess


def run(*args):
    return subprocess.run(["/app/wordfreq", *args], capture_output=True, text=True)


def test_other_files(tmp_path):
    x, y = tmp_path / "x.txt", tmp_path / "y.txt"
    x.write_text("Don't stop; don't STOP!\nzebra apple Apple 42 zebra\n")
    y.write_text("Zebra-crossing\n")
    r = run("2", str(x), str(y))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["3 zebra", "2 apple"]
    # ties alphabetically; fewer distinct words than N prints them all
    assert run("10", str(x)).stdout.splitlines() == ["2 apple", "2 don", "2 stop", "2 t", "2 zebra"]


def test_other_bad_counts(tmp_path):
    (tmp_path / "x.txt").write_text("a b\n")
    r = run("3x", str(tmp_path / "x.txt"))
    assert r.returncode == 2 and "usage" in r.stderr.lower()
