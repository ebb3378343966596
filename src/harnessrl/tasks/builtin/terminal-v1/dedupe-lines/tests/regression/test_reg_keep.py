from pathlib import Path


def test_nothing_lost():
    lines = {x.lower() for x in Path("/app/emails.txt").read_text().split()}
    assert lines == {"ann@x.io", "bob@y.io", "cy@z.io", "dee@w.io"}
