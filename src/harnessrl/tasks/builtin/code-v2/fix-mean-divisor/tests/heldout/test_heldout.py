from averages import mean


def test_other_lists():
    assert mean([10]) == 10
    assert mean([1, 1, 1, 5]) == 2
    assert mean([-3, 3, 9]) == 3
