from percent import ratio


def test_ratio():
    assert ratio(3, 4) == 0.75
