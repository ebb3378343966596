from pathlib import Path


def test_other_files_untouched():
    assert Path("/app/photos/2024/notes.txt").read_text() == "data 2024/notes.txt\n"
    assert Path("/app/photos/2023/keep.jpg").read_text() == "data 2023/keep.jpg\n"
    assert Path("/app/photos/2024/raw.png").exists()
