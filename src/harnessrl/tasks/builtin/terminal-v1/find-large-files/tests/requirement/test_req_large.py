from pathlib import Path


def test_list():
    assert Path("/app/large.txt").read_text().splitlines() == ["a/b/huge video.mp4", "a/big.bin", "c/just-over.bin"]
