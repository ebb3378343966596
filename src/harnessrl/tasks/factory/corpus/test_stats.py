import pytest

import stats as m


@pytest.mark.parametrize("args, expected", [(([1, 2, 3],), 2), (([5],), 5), (([1, 2],), 1.5), (([-2, 2, 6],), 2)])
def test_mean(args, expected):
    assert m.mean(*args) == expected


def test_mean_rejects_empty():
    with pytest.raises(ValueError):
        m.mean([])


@pytest.mark.parametrize("args, expected", [(([3, 1, 2],), 2), (([4, 1, 3, 2],), 2.5), (([7],), 7), (([1, 1, 5, 9],), 3.0), (([9, 2],), 5.5)])
def test_median(args, expected):
    assert m.median(*args) == expected


@pytest.mark.parametrize("args, expected", [(([1, 2, 2, 3],), 2), (([4, 4, 1, 1],), 1), (([7],), 7), (([3, 1, 3, 1, 1],), 1)])
def test_mode(args, expected):
    assert m.mode(*args) == expected


@pytest.mark.parametrize("args, expected", [(([1, 1, 1],), 0), (([1, 3],), 1), (([2, 4, 4, 4, 5, 5, 7, 9],), 4)])
def test_variance(args, expected):
    assert m.variance(*args) == expected


@pytest.mark.parametrize("args, expected", [(([3, 9, 1],), 8), (([],), 0), (([5],), 0), (([-2, 2],), 4)])
def test_value_range(args, expected):
    assert m.value_range(*args) == expected


@pytest.mark.parametrize("args, expected", [(([0, 5, 10],), [0.0, 0.5, 1.0]), (([3, 3],), [0.0, 0.0]), (([2, 1],), [1.0, 0.0])])
def test_normalize(args, expected):
    assert m.normalize(*args) == expected


@pytest.mark.parametrize("args, expected", [
    (([1, 2, 3, 4], 3), 50.0), (([1, 2, 3, 4], 1), 0.0), (([], 5), 0.0), (([1, 2, 3, 4], 10), 100.0), (([2, 2], 2), 0.0),
])
def test_percentile_rank(args, expected):
    assert m.percentile_rank(*args) == expected


@pytest.mark.parametrize("args, expected", [(([1, 2, 3, 4], 2), [1.5, 2.5, 3.5]), (([1, 2, 3], 3), [2.0]), (([1, 2], 3), []), (([4, 8], 1), [4.0, 8.0])])
def test_moving_average(args, expected):
    assert m.moving_average(*args) == expected


@pytest.mark.parametrize("args, expected", [((5, 0, 10), 5), ((-1, 0, 10), 0), ((11, 0, 10), 10), ((0, 0, 10), 0), ((10, 0, 10), 10)])
def test_clamp(args, expected):
    assert m.clamp(*args) == expected


@pytest.mark.parametrize("args, expected", [(([1, 3], [1, 1]), 2), (([1, 3], [3, 1]), 1.5), (([10], [2]), 10)])
def test_weighted_mean(args, expected):
    assert m.weighted_mean(*args) == expected


def test_weighted_mean_rejects_zero_weights():
    with pytest.raises(ValueError):
        m.weighted_mean([1, 2], [0, 0])


@pytest.mark.parametrize("args, expected", [
    (([0, 1, 2, 3, 9], 2, 0, 10), [4, 1]), (([10, -1], 2, 0, 10), [0, 0]), (([5, 5, 0], 5, 0, 10), [1, 0, 2, 0, 0]),
    (([], 3, 0, 3), [0, 0, 0]),
])
def test_histogram(args, expected):
    assert m.histogram(*args) == expected
