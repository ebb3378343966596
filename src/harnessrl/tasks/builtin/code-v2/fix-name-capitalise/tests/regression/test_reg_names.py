from names import sort_key


def test_sort_key():
    assert sort_key("Ada", "Lovelace") == ("lovelace", "ada")
