from bounds import clamp


def test_other_intervals():
    assert clamp(0.5, -1.0, 1.0) == 0.5
    assert clamp(7, 7, 9) == 7
    assert clamp(100, -5, 5) == 5
    assert clamp(-100, -5, 5) == -5
