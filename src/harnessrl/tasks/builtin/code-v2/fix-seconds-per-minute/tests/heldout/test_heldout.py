from clock import split_seconds, to_seconds


def test_other_times():
    assert to_seconds(1, 0) == 60
    assert to_seconds(90, 30) == 5430
    assert split_seconds(to_seconds(7, 59)) == (7, 59)
