from matrix import multiply, transpose


def test_rectangular():
    assert transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]
    assert transpose([[1], [2]]) == [[1, 2]]


def test_empty():
    assert transpose([]) == []


def test_multiply_rectangular():
    assert multiply([[1, 2, 3]], [[1], [2], [3]]) == [[14]]
