from listmath import squares


def test_squares():
    assert squares([1, 2, 3]) == [1, 4, 9]
