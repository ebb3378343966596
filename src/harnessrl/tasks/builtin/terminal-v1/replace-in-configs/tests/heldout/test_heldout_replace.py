import stat
import subprocess


def run(*args):
    return subprocess.run(["/app/replace_in_configs", *args], capture_output=True, text=True)


def test_other_tree_and_special_characters(tmp_path):
    root = tmp_path / "conf root"
    (root / ".hidden").mkdir(parents=True)
    (root / "dir.conf").mkdir()
    files = {
        "db.conf": "host = db.local\nbackup = dbXlocal\nagain=db.local,db.local",  # no final newline
        ".hidden/app server.conf": "peer db.local:5432\n",
        "dir.conf/inner.conf": "db.local\n",
        "dir.conf/notes.txt": "db.local\n",
        "db.conf.bak": "host = db.local\n",
        "db.config": "host = db.local\n",
        "conf": "db.local\n",
    }
    for rel, text in files.items():
        (root / rel).write_text(text)
    (root / "db.conf").chmod(0o640)
    new = r"[db]&\1/#|$HOME"  # characters that sed, regexes or the shell would treat specially
    r = run(str(root), "db.local", new)
    assert r.returncode == 0, r.stderr
    assert (root / "db.conf").read_text() == f"host = {new}\nbackup = dbXlocal\nagain={new},{new}"
    assert (root / ".hidden/app server.conf").read_text() == f"peer {new}:5432\n"
    assert (root / "dir.conf/inner.conf").read_text() == f"{new}\n"
    for rel in ("dir.conf/notes.txt", "db.conf.bak", "db.config", "conf"):
        assert (root / rel).read_text() == files[rel], rel
    assert stat.S_IMODE((root / "db.conf").stat().st_mode) == 0o640


def test_other_pattern_characters(tmp_path):
    (tmp_path / "a.conf").write_text("path=/opt/*.d [x] a.b axb\n")
    assert run(str(tmp_path), "/opt/*.d", "/srv/conf.d").returncode == 0
    assert run(str(tmp_path), "[x]", "y").returncode == 0
    assert run(str(tmp_path), "a.b", "A.B").returncode == 0
    assert (tmp_path / "a.conf").read_text() == "path=/srv/conf.d y A.B axb\n"


def test_other_bad_arguments(tmp_path):
    (tmp_path / "a.conf").write_text("x\n")
    for args in ((str(tmp_path), "", "y"), (str(tmp_path / "a.conf"), "x", "y"), (str(tmp_path / "nope"), "x", "y")):
        r = run(*args)
        assert r.returncode == 2 and "usage" in r.stderr.lower(), args
    assert (tmp_path / "a.conf").read_text() == "x\n"
