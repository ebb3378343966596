from nested import flatten


def test_strings_are_atoms():
    assert flatten(["ab", ["c", ("de",)]]) == ["ab", "c", "de"]


def test_bytes_are_atoms():
    assert flatten([b"xy", [b"z"]]) == [b"xy", b"z"]
