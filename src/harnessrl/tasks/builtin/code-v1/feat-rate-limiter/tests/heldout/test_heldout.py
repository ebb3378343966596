import pytest
from ratelimit import TokenBucket


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_other_rates():
    clock = Clock()
    b = TokenBucket(rate=0.5, capacity=2, clock=clock)
    assert b.allow(2) and not b.allow()
    clock.t = 2.0
    assert b.tokens == pytest.approx(1)
    assert b.allow() and not b.allow()
    clock.t = 1000
    assert b.tokens == pytest.approx(2)


def test_other_validation():
    with pytest.raises(ValueError):
        TokenBucket(rate=-1, capacity=5)
