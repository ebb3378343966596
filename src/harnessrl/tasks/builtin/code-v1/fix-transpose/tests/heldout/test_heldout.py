from matrix import multiply, transpose


def test_other_shapes():
    assert transpose([[1, 2]]) == [[1], [2]]
    assert transpose([[1, 2], [3, 4], [5, 6], [7, 8]]) == [[1, 3, 5, 7], [2, 4, 6, 8]]
    assert multiply([[1], [2]], [[3, 4]]) == [[3, 4], [6, 8]]
