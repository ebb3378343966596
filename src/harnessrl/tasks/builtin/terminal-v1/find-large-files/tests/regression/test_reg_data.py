from pathlib import Path


def test_files_still_there():
    assert Path("/app/data/a/big.bin").stat().st_size == 2000000
    assert Path("/app/data/link-to-big").is_symlink()
