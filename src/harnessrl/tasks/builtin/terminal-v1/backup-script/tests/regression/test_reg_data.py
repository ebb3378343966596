from pathlib import Path


def test_data_untouched():
    assert Path("/app/data/a.txt").read_text() == "alpha\n"
