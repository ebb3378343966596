from averages import mean


def test_mean_of_three():
    assert mean([2, 4, 6]) == 4


def test_mean_of_two():
    assert mean([1, 2]) == 1.5
