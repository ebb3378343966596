import os
import subprocess


def run(*args):
    return subprocess.run(["/app/find_large", *args], capture_output=True, text=True)


def test_other_tree(tmp_path):
    root = tmp_path / "media files"
    (root / "Zeta" / "deep" / "er").mkdir(parents=True)
    (root / ".cache").mkdir()
    (root / "dir.big").mkdir()
    sizes = {"Zeta/deep/er/clip one.mov": 501, "alpha.iso": 500, "beta.img": 9000, ".cache/blob": 700,
             "dir.big/tiny": 1, "-dash.dat": 600, "empty": 0, "Zeta/x": 499}
    for rel, n in sizes.items():
        (root / rel).write_bytes(b"x" * n)
    os.symlink("beta.img", root / "link-to-beta")
    r = run(str(root), "500")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["-dash.dat", ".cache/blob", "Zeta/deep/er/clip one.mov", "beta.img"]
    # SIZE 0: every non-empty regular file; a trailing slash on DIR changes nothing
    assert run(str(root) + "/", "0").stdout.splitlines() == [
        "-dash.dat", ".cache/blob", "Zeta/deep/er/clip one.mov", "Zeta/x", "alpha.iso", "beta.img", "dir.big/tiny"]
    assert run(str(root), "9000").stdout == ""


def test_other_bad_arguments(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 10)
    for args in ((str(tmp_path / "f"), "1"), (str(tmp_path), "-5"), (str(tmp_path), "ten"), (str(tmp_path / "nope"), "1")):
        r = run(*args)
        assert r.returncode == 2 and "usage" in r.stderr.lower(), args
