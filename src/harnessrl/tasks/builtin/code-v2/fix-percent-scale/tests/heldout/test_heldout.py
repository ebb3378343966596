from percent import percent


def test_other_percentages():
    assert percent(3, 3) == 100
    assert percent(0, 9) == 0
    assert abs(percent(1, 8) - 12.5) < 1e-9
