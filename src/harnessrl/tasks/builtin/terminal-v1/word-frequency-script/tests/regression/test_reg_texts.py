from pathlib import Path


def test_texts_untouched():
    assert Path("/app/texts/a.txt").read_text() == "The cat and the hat.\nThe end!\n"
