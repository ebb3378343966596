import pytest
from retry import retry


def test_other_attempts():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 4:
            raise KeyError(len(calls))
        return "ok"

    assert retry(flaky, attempts=5) == "ok" and len(calls) == 4
    calls.clear()
    with pytest.raises(KeyError):
        retry(flaky, attempts=2)
    assert len(calls) == 2
