from pricing import receipt


def test_receipt():
    assert receipt([2.5, 2.5], tax_rate=0.1) == "2 items, total 5.50"
