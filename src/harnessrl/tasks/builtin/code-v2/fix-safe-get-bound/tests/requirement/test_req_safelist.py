from safelist import safe_get


def test_index_equal_to_length():
    assert safe_get([1, 2, 3], 3) is None
    assert safe_get([1, 2, 3], 3, "x") == "x"
