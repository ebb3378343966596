from nested import flatten


def test_other_atoms():
    assert flatten([["hello"], "w", [["o", ["rld"]]]]) == ["hello", "w", "o", "rld"]
    assert flatten([[b"ab"], (b"c", [b"de"])]) == [b"ab", b"c", b"de"]
