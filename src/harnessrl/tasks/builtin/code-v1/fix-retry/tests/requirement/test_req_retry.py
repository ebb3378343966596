import pytest
from retry import retry


def test_at_most_attempts_calls_and_reraises():
    calls = []

    def always_fails():
        calls.append(1)
        raise RuntimeError(f"failure {len(calls)}")

    with pytest.raises(RuntimeError, match="failure 3"):
        retry(always_fails, attempts=3)
    assert len(calls) == 3
