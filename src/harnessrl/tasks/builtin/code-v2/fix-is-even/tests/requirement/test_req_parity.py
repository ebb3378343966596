from parity import count_evens, is_even


def test_even_numbers():
    assert is_even(4) and is_even(0)
    assert not is_even(7)


def test_count_evens():
    assert count_evens([1, 2, 3, 4]) == 2
