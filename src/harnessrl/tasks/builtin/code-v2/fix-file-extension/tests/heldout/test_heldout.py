from paths import extension


def test_other_names():
    assert extension("a.b.c.d") == "d"
    assert extension("v1.2.json") == "json"
