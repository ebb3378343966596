from clock import split_seconds


def test_split():
    assert split_seconds(125) == (2, 5)
