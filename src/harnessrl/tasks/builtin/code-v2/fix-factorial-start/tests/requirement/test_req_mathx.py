from mathx import factorial


def test_small():
    assert factorial(5) == 120
    assert factorial(0) == 1
