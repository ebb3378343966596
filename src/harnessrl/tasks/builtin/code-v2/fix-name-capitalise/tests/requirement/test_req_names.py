from names import full_name


def test_capitalised():
    assert full_name("ada", "LOVELACE") == "Ada Lovelace"
