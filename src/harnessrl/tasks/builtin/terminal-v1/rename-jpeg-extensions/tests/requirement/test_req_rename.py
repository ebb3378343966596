from pathlib import Path

ROOT = Path("/app/photos")


def test_renamed():
    names = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file())
    assert names == ["2023/beach.jpg", "2023/keep.jpg", "2023/summer/sea.jpg", "2024/cat.jpg",
                     "2024/my dog.jpg", "2024/notes.txt", "2024/raw.png"]
    assert (ROOT / "2024/my dog.jpg").read_text() == "data 2024/my dog.jpeg\n"
