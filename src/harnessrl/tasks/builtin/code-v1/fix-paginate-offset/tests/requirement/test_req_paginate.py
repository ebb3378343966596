from pages import paginate

ITEMS = list(range(10))


def test_first_page():
    assert paginate(ITEMS, 1, 3) == [0, 1, 2]


def test_last_partial_page():
    assert paginate(ITEMS, 4, 3) == [9]


def test_every_item_appears_once():
    seen = [x for p in range(1, 5) for x in paginate(ITEMS, p, 3)]
    assert seen == ITEMS
