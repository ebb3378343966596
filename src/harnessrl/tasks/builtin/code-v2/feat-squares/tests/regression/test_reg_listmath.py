from listmath import doubles


def test_doubles():
    assert doubles([1, 2]) == [2, 4]
