import os
import subprocess
from pathlib import Path

ROOT = Path("/app/photos")
BEFORE = ["2023/beach.jpeg", "2023/summer/sea.JPEG", "2024/cat.jpeg", "2024/my dog.jpeg", "2024/notes.txt",
          "2023/keep.jpg", "2024/raw.png"]
AFTER = ["2023/beach.jpg", "2023/keep.jpg", "2023/summer/sea.jpg", "2024/cat.jpg", "2024/my dog.jpg",
         "2024/notes.txt", "2024/raw.png"]


def tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_renamed():
    assert tree(ROOT) == AFTER
    assert (ROOT / "2024/my dog.jpg").read_text() == "data 2024/my dog.jpeg\n"


def test_script_on_the_same_photos(tmp_path):
    assert os.access("/app/fix_jpeg_ext", os.X_OK)
    for rel in BEFORE:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(f"data {rel}\n")
    r = subprocess.run(["/app/fix_jpeg_ext", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert tree(tmp_path) == AFTER
    assert (tmp_path / "2023/summer/sea.jpg").read_text() == "data 2023/summer/sea.JPEG\n"


def test_usage():
    r = subprocess.run(["/app/fix_jpeg_ext"], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr.lower()
