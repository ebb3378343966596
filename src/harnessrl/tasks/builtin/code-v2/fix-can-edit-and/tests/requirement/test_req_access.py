from access import can_edit


def test_inactive_editor():
    assert not can_edit({"active": False, "role": "editor"})


def test_active_viewer():
    assert not can_edit({"active": True, "role": "viewer"})
