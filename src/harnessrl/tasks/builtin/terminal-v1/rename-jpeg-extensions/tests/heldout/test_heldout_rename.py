import subprocess


def run(*args):
    return subprocess.run(["/app/fix_jpeg_ext", *args], capture_output=True, text=True)


def tree(root):
    return sorted(str(p.relative_to(root)) + ("/" if p.is_dir() else "") for p in root.rglob("*"))


def make(root, names):
    for rel in names:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"data {rel}\n")


def test_other_names(tmp_path):
    root = tmp_path / "camera roll"
    make(root, ["img.2024.01.jpeg", "album.jpeg/x.JPEG", "album.jpeg/y.jpeg.txt", "-first.jpeg",
                "deep/er/still/z z.JPEG", "mixed.Jpeg", "shot.jpg"])
    r = run(str(root))
    assert r.returncode == 0, r.stderr
    assert tree(root) == ["-first.jpg", "album.jpeg/", "album.jpeg/x.jpg", "album.jpeg/y.jpeg.txt", "deep/",
                          "deep/er/", "deep/er/still/", "deep/er/still/z z.jpg", "img.2024.01.jpg", "mixed.Jpeg",
                          "shot.jpg"]
    assert (root / "deep/er/still/z z.jpg").read_text() == "data deep/er/still/z z.JPEG\n"


def test_other_name_taken(tmp_path):
    make(tmp_path, ["dup.jpeg", "dup.jpg", "free.jpeg"])
    r = run(str(tmp_path))
    assert r.returncode == 1 and "dup.jpeg" in r.stderr
    assert tree(tmp_path) == ["dup.jpeg", "dup.jpg", "free.jpg"]
    assert (tmp_path / "dup.jpg").read_text() == "data dup.jpg\n"  # never overwritten


def test_other_bad_arguments(tmp_path):
    make(tmp_path, ["a.jpeg"])
    for args in ((str(tmp_path / "a.jpeg"),), (str(tmp_path / "nope"),), (str(tmp_path), str(tmp_path))):
        r = run(*args)
        assert r.returncode == 2 and "usage" in r.stderr.lower(), args
    assert tree(tmp_path) == ["a.jpeg"]
