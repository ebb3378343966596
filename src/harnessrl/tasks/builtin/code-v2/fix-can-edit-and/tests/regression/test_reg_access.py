from access import can_edit, can_view


def test_active_editor_and_view():
    assert can_edit({"active": True, "role": "editor"})
    assert can_view({"active": True, "role": "viewer"})
