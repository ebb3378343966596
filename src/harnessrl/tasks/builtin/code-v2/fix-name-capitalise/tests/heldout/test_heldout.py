from names import full_name


def test_other_names():
    assert full_name("alan", "turing") == "Alan Turing"
    assert full_name("GRACE", "hopper") == "Grace Hopper"
