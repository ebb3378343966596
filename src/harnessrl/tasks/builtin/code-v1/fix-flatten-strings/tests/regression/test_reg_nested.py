from nested import depth, flatten


def test_numbers():
    assert flatten([1, [2, (3, [4])], []]) == [1, 2, 3, 4]


def test_depth():
    assert depth([1, [2, [3]]]) == 3
    assert depth(5) == 0
