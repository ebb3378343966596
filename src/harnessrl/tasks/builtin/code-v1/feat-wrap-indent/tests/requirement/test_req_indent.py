from formatting import wrap


def test_indent_counts_towards_width():
    assert wrap("aa bb cc", 6, indent="> ") == ["> aa", "> bb", "> cc"]
    assert wrap("aa bb cc", 7, indent="> ") == ["> aa bb", "> cc"]


def test_every_line_fits():
    text = "the quick brown fox jumps over the lazy dog " * 3
    lines = wrap(text, 20, indent="    ")
    assert all(line.startswith("    ") and len(line) <= 20 for line in lines)
    assert " ".join(line.strip() for line in lines) == text.strip()
