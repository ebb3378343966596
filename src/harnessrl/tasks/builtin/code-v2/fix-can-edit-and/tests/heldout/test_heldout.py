from access import can_edit


def test_other_users():
    assert not can_edit({"active": True, "role": "admin"})
    assert not can_edit({"active": False, "role": "viewer"})
