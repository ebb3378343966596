from inventory import restock, stock


def test_more_unknowns():
    assert stock({}, "anything") == 0
    inv = restock({"a": 1}, "b", 5)
    assert inv == {"a": 1, "b": 5}
