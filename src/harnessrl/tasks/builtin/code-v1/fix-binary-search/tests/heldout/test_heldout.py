from search import binary_search


def test_other_positions():
    items = [-9, -4, 0, 8, 15, 16, 23, 42]
    assert [binary_search(items, x) for x in items] == list(range(len(items)))
    assert binary_search([3, 6], 6) == 1
