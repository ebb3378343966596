import pytest

import seqs as m


@pytest.mark.parametrize("args, expected", [((0,), 0), ((1,), 1), ((4,), 10), ((10,), 55)])
def test_triangular(args, expected):
    assert m.triangular(*args) == expected


@pytest.mark.parametrize("args, expected", [((1, 2, 4), [1, 3, 5, 7]), ((5, -1, 3), [5, 4, 3]), ((0, 3, 0), []), ((7, 0, 2), [7, 7])])
def test_arithmetic_sequence(args, expected):
    assert m.arithmetic_sequence(*args) == expected


@pytest.mark.parametrize("args, expected", [((1, 2, 4), 15), ((3, 1, 3), 9), ((5, 10, 0), 0), ((2, 3, 2), 8)])
def test_geometric_sum(args, expected):
    assert m.geometric_sum(*args) == expected


@pytest.mark.parametrize("args, expected", [((5, 2), 10), ((5, 0), 1), ((5, 5), 1), ((5, 6), 0), ((10, 3), 120), ((4, -1), 0), ((6, 4), 15)])
def test_choose(args, expected):
    assert m.choose(*args) == expected


@pytest.mark.parametrize("args, expected", [((0,), [1]), ((1,), [1, 1]), ((4,), [1, 4, 6, 4, 1]), ((2,), [1, 2, 1])])
def test_pascal_row(args, expected):
    assert m.pascal_row(*args) == expected


@pytest.mark.parametrize("args, expected", [((5, 2), 20), ((4, 4), 24), ((3, 0), 1), ((6, 1), 6)])
def test_permutations_count(args, expected):
    assert m.permutations_count(*args) == expected


@pytest.mark.parametrize("args, expected", [(("1",), "11"), (("11",), "21"), (("1211",), "111221"), (("3322251",), "23321511"), (("",), "")])
def test_look_and_say(args, expected):
    assert m.look_and_say(*args) == expected


@pytest.mark.parametrize("args, expected", [(([1, 3, 5],), True), (([1, 2, 4],), False), (([7],), True), (([],), True), (([5, 3, 1, -1],), True), (([1, 3, 5, 8],), False)])
def test_is_arithmetic(args, expected):
    assert m.is_arithmetic(*args) == expected


@pytest.mark.parametrize("args, expected", [(([1, 2, 3],), 8), (([],), 1), (([1, 1, 2],), 4)])
def test_powerset_size(args, expected):
    assert m.powerset_size(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([3, 1, 2], 2), [(1, 2), (1, 3), (2, 3)]), (([1, 2], 0), [()]), (([1, 2], 3), []), (([4, 5, 6], 3), [(4, 5, 6)]),
    (([1, 2, 3], 1), [(1,), (2,), (3,)]),
])
def test_subsets_of_size(args, expected):
    assert m.subsets_of_size(*args) == expected


@pytest.mark.parametrize("args, expected", [((0,), 1), ((1,), 1), ((3,), 5), ((5,), 42)])
def test_catalan(args, expected):
    assert m.catalan(*args) == expected
