import subprocess


def dedupe(*paths):
    return subprocess.run(["/app/dedupe", *map(str, paths)], capture_output=True, text=True)


def test_another_list(tmp_path):
    f = tmp_path / "subscribers.txt"
    f.write_text("Zed@q.io\namy@r.io\nzed@Q.IO\nAMY@R.IO\nkim@s.io\namy@r.io\n")
    r = dedupe(f)
    assert r.returncode == 0, r.stderr
    assert f.read_text() == "Zed@q.io\namy@r.io\nkim@s.io\n"


def test_each_file_on_its_own(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("x@a.io\ny@b.io\nX@A.io\n")
    b.write_text("y@b.io\nx@a.io\ny@b.io\n")
    r = dedupe(a, b)
    assert r.returncode == 0, r.stderr
    assert a.read_text() == "x@a.io\ny@b.io\n"
    assert b.read_text() == "y@b.io\nx@a.io\n"


def test_a_list_without_duplicates_is_unchanged(tmp_path):
    f = tmp_path / "unique.txt"
    f.write_text("one@a.io\nTwo@b.io\nthree@c.io\n")
    assert dedupe(f).returncode == 0
    assert f.read_text() == "one@a.io\nTwo@b.io\nthree@c.io\n"
