from box import Box


def test_emptiness_follows_items():
    b = Box()
    for i in range(3):
        b.put(i)
    assert not b.is_empty()
    b.items.clear()
    assert b.is_empty()
