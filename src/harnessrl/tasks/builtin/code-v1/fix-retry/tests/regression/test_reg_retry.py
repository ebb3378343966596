import pytest
from retry import retry


def test_succeeds_after_failures():
    state = {"n": 0}

    def flaky():
        state["n"] += 1
        if state["n"] < 3:
            raise OSError("not yet")
        return "ok"

    assert retry(flaky, attempts=3) == "ok"


def test_other_exceptions_propagate_immediately():
    calls = []

    def boom():
        calls.append(1)
        raise KeyError("x")

    with pytest.raises(KeyError):
        retry(boom, attempts=5, exceptions=(OSError,))
    assert len(calls) == 1


def test_attempts_validated():
    with pytest.raises(ValueError):
        retry(lambda: 1, attempts=0)
