import pytest
from orders import can_cancel, next_status


def test_string_behaviour():
    assert next_status("new") == "paid"
    assert can_cancel("paid") and not can_cancel("shipped")
    with pytest.raises(ValueError):
        next_status("shipped")
