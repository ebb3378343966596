from units import km_to_miles


def test_one_mile():
    assert abs(km_to_miles(1.609344) - 1.0) < 1e-9


def test_marathon():
    assert abs(km_to_miles(42.195) - 26.2188) < 1e-3
