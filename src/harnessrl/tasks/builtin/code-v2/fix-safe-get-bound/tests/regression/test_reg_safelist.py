from safelist import safe_first, safe_get


def test_inside_and_negative():
    assert safe_get([1, 2, 3], 1) == 2
    assert safe_get([1, 2, 3], -1, 0) == 0
    assert safe_first([7]) == 7
