from mathx import factorial


def test_more_factorials():
    assert factorial(1) == 1
    assert factorial(10) == 3628800
    assert factorial(20) == 2432902008176640000
