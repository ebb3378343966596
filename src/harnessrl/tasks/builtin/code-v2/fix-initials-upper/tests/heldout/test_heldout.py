from initials import initials


def test_other_names():
    assert initials("grace brewster hopper") == "GBH"
    assert initials("x") == "X"
