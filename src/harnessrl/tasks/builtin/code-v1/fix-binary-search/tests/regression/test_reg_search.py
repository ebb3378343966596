from search import binary_search, contains


def test_missing():
    assert binary_search([1, 3, 5], 4) == -1
    assert binary_search([], 1) == -1


def test_first_element_and_contains():
    assert binary_search([2, 4, 6, 8, 10], 2) == 0
    assert contains([2, 4, 6], 4) and not contains([2, 4, 6], 5)
