from box import Box


def test_new_box_is_empty():
    assert Box().is_empty() is True


def test_box_with_item():
    b = Box()
    b.put("pen")
    assert b.is_empty() is False
