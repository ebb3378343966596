from units import miles_to_km


def test_miles_to_km():
    assert abs(miles_to_km(10) - 16.09344) < 1e-9
    assert miles_to_km(0) == 0
