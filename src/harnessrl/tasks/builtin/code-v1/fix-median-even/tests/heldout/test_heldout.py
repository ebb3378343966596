from stats import median


def test_other_even_lengths():
    assert median([7, 1]) == 4
    assert median([-3, 5, 1, -1]) == 0
    assert median([2.5, 0.5, 1.0, 4.0]) == 1.75
