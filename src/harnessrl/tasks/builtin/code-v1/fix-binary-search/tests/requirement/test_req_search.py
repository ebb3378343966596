from search import binary_search


def test_last_element():
    assert binary_search([1, 3, 5, 7], 7) == 3


def test_single_element():
    assert binary_search([42], 42) == 0


def test_every_position():
    items = list(range(0, 40, 2))
    assert [binary_search(items, x) for x in items] == list(range(len(items)))
