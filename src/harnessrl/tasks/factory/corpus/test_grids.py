import pytest

import grids as m


@pytest.mark.parametrize("args, expected", [
    (([[1, 2, 3], [4, 5, 6]],), [[1, 4], [2, 5], [3, 6]]), (([],), []), (([[7]],), [[7]]), (([[1], [2]],), [[1, 2]]),
])
def test_transpose(args, expected):
    assert m.transpose(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([[1, 2], [3, 4]],), [[3, 1], [4, 2]]), (([[1, 2, 3]],), [[1], [2], [3]]), (([[1], [2]],), [[2, 1]]),
])
def test_rotate_clockwise(args, expected):
    assert m.rotate_clockwise(*args) == expected


GRID = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]


@pytest.mark.parametrize("args, expected", [
    ((GRID, 1, 1), [2, 8, 4, 6]), ((GRID, 0, 0), [4, 2]), ((GRID, 2, 2), [6, 8]), ((GRID, 0, 1), [5, 1, 3]), ((GRID, 2, 0), [4, 8]),
])
def test_neighbours(args, expected):
    assert m.neighbours(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([[1, 1, 0], [0, 1, 0], [0, 0, 1]],), 2), (([[0, 0], [0, 0]],), 0), (([[1, 0, 1], [0, 1, 0], [1, 0, 1]],), 5),
    (([[1, 1], [1, 1]],), 1),
])
def test_count_islands(args, expected):
    assert m.count_islands(*args) == expected


def test_row_and_column_sums():
    assert m.row_sums(GRID) == [6, 15, 24]
    assert m.column_sums(GRID) == [12, 15, 18]
    assert m.column_sums([]) == []
    assert m.row_sums([[]]) == [0]


def test_column_sums_rectangular():
    assert m.column_sums([[1, 2, 3], [4, 5, 6]]) == [5, 7, 9]


@pytest.mark.parametrize("args, expected", [((GRID,), [1, 5, 9]), (([[4]],), [4]), (([],), [])])
def test_diagonal(args, expected):
    assert m.diagonal(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([[2, 7, 6], [9, 5, 1], [4, 3, 8]],), True), ((GRID,), False), (([[1, 1], [1, 1]],), True),
    (([[2, 7, 6], [9, 5, 1], [4, 8, 3]],), False), (([[1, 2], [2, 1]],), False),
])
def test_is_magic_square(args, expected):
    assert m.is_magic_square(*args) == expected


def test_flood_fill():
    g = [[0, 0, 1], [0, 1, 1], [1, 0, 0]]
    assert m.flood_fill(g, 0, 0, 7) == [[7, 7, 1], [7, 1, 1], [1, 0, 0]]
    assert m.flood_fill(g, 0, 2, 0) == [[0, 0, 0], [0, 0, 0], [1, 0, 0]]
    assert m.flood_fill(g, 2, 2, 0) == g
    assert g == [[0, 0, 1], [0, 1, 1], [1, 0, 0]]


@pytest.mark.parametrize("args, expected", [(([[1, 0], [0, 1]],), "#.\n.#"), (([[1, 1]], "x", "o"), "xx"), (([],), "")])
def test_render(args, expected):
    assert m.render(*args) == expected
