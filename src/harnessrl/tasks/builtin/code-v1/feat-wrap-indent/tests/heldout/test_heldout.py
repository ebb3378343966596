from formatting import wrap


def test_other_indent():
    assert wrap("one two three", 9, indent="- ") == ["- one two", "- three"]


def test_other_widths_fit():
    text = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do " * 2
    for width, indent in ((15, "  "), (30, "    |")):
        lines = wrap(text, width, indent=indent)
        assert all(line.startswith(indent) and len(line) <= width for line in lines)
        assert " ".join(line[len(indent):] for line in lines) == text.strip()
