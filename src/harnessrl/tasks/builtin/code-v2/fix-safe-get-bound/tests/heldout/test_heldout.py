from safelist import safe_first, safe_get


def test_empty_list():
    assert safe_get([], 0, "none") == "none"
    assert safe_first([]) is None
