from clock import to_seconds


def test_two_minutes():
    assert to_seconds(2, 5) == 125
