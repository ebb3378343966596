from parity import count_evens, is_even


def test_negatives_and_large():
    assert is_even(-6) and not is_even(-5)
    assert is_even(10**12)
    assert count_evens([0, 0, 5]) == 2
