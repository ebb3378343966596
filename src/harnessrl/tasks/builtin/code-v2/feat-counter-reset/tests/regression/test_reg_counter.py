from counter import Counter


def test_increment():
    c = Counter(5)
    assert c.increment() == 6
    assert c.increment(4) == 10
