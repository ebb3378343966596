from units import km_to_miles, miles_to_km


def test_round_trip_and_others():
    assert abs(km_to_miles(100) - 62.1371) < 1e-3
    assert abs(km_to_miles(miles_to_km(7.5)) - 7.5) < 1e-9
