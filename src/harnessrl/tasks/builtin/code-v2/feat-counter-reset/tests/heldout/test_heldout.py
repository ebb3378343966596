from counter import Counter


def test_reset_after_start_value():
    c = Counter(42)
    c.reset()
    assert c.value == 0
    assert c.increment(3) == 3
