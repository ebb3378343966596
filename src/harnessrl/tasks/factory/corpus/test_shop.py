import pytest

import shop as m


def test_add_and_subtotal():
    c = m.Cart()
    c.add("pen", 150, 2)
    c.add("pad", 300)
    c.add("pen", 999)
    assert c.lines == {"pen": [150, 3], "pad": [300, 1]}
    assert c.subtotal() == 750


@pytest.mark.parametrize("qty", [0, -2])
def test_add_rejects_bad_quantity(qty):
    with pytest.raises(ValueError):
        m.Cart().add("pen", 100, qty)


def test_remove():
    c = m.Cart()
    c.add("pen", 100, 3)
    c.remove("pen")
    assert c.lines == {"pen": [100, 2]}
    c.remove("pen", 2)
    assert c.lines == {}
    with pytest.raises(KeyError):
        c.remove("pen")


def test_apply_code():
    c = m.Cart()
    assert c.apply_code("SAVE10") is True and c.code == "SAVE10"
    assert c.apply_code("FREE") is False and c.code == "SAVE10"
    assert c.apply_code("HALF") is True and c.code == "HALF"


@pytest.mark.parametrize("code, expected", [(None, 0), ("SAVE10", 105), ("HALF", 525)])
def test_discount(code, expected):
    c = m.Cart()
    c.add("x", 1050)
    if code:
        c.apply_code(code)
    assert c.discount() == expected


@pytest.mark.parametrize("code, expected", [(None, 1260), ("SAVE10", 1134), ("HALF", 630)])
def test_total(code, expected):
    c = m.Cart()
    c.add("x", 500, 2)
    c.add("y", 50, 1)
    if code:
        c.apply_code(code)
    assert c.total() == expected


def test_item_count():
    c = m.Cart()
    assert c.item_count() == 0
    c.add("a", 1, 2)
    c.add("b", 1, 5)
    assert c.item_count() == 7


@pytest.mark.parametrize("args, expected", [((100, 3), 33), ((100, 8), 13), ((5, 2), 3), ((0, 4), 0), ((7, 1), 7)])
def test_price_per_unit(args, expected):
    assert m.price_per_unit(*args) == expected


def test_price_per_unit_rejects():
    with pytest.raises(ValueError):
        m.price_per_unit(100, 0)


@pytest.mark.parametrize("args, expected", [((100, 10), 1000), ((100, 11), 1090), ((100, 100), 9100), ((100, 101), 9180), ((100, 0), 0), ((10, 12), 118)])
def test_bulk_price(args, expected):
    assert m.bulk_price(*args) == expected
