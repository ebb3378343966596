from ratelimit import now


def test_now_is_monotonic():
    a = now()
    assert now() >= a
