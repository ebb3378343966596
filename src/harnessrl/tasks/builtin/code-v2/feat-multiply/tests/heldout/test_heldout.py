from calc import multiply


def test_more_products():
    assert multiply(-4, 2.5) == -10
    assert multiply(0, 99) == 0
    assert multiply("ab", 2) == "abab"
