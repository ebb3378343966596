from box import Box


def test_put_and_size():
    b = Box()
    b.put(1)
    b.put(2)
    assert b.size() == 2
