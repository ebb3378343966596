from pages import paginate

ITEMS = list("abcdefghijk")


def test_other_pages():
    assert paginate(ITEMS, 1, 4) == ["a", "b", "c", "d"]
    assert paginate(ITEMS, 3, 4) == ["i", "j", "k"]
    assert [x for p in range(1, 4) for x in paginate(ITEMS, p, 5)] == ITEMS
