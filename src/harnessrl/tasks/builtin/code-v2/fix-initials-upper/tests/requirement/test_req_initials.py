from initials import initials


def test_lower_name():
    assert initials("ada lovelace") == "AL"
