from stats import median


def test_even_length_is_mean_of_middle_pair():
    assert median([4, 1, 3, 2]) == 2.5


def test_even_length_two_values():
    assert median([10, 20]) == 15


def test_even_length_unsorted_floats():
    assert median([0.5, 9.0, 3.0, 1.5, 7.0, 2.0]) == 2.5
