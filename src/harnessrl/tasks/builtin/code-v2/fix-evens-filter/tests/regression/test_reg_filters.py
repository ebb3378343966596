from filters import positives


def test_positives():
    assert positives([-1, 0, 5]) == [5]
