from initials import initials, surname


def test_already_upper():
    assert initials("Alan Turing") == "AT"
    assert surname("Alan Turing") == "Turing"
