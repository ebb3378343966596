from counter import Counter


def test_reset():
    c = Counter()
    c.increment()
    c.increment()
    c.reset()
    assert c.value == 0
