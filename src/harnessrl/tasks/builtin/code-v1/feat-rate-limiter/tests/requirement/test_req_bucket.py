import pytest
from ratelimit import TokenBucket


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_spend_and_refill():
    clock = Clock()
    b = TokenBucket(rate=2, capacity=4, clock=clock)
    assert all(b.allow() for _ in range(4))
    assert not b.allow()
    clock.t = 1.0
    assert b.tokens == pytest.approx(2)
    assert b.allow(2) and not b.allow()


def test_never_above_capacity_and_no_partial_spend():
    clock = Clock()
    b = TokenBucket(rate=10, capacity=3, clock=clock)
    clock.t = 100
    assert b.tokens == pytest.approx(3)
    assert not b.allow(5)
    assert b.tokens == pytest.approx(3)


def test_validation():
    with pytest.raises(ValueError):
        TokenBucket(rate=0, capacity=1)
    with pytest.raises(ValueError):
        TokenBucket(rate=1, capacity=0)
