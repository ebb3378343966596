from cache import LRUCache


def test_other_recency():
    c = LRUCache(3)
    for k in "xyz":
        c.put(k, k.upper())
    assert c.get("x") == "X"
    c.put("w", "W")
    assert "y" not in c and all(k in c for k in "xzw")
    c.put("z", "Z2")
    c.put("v", "V")
    assert "x" not in c and c.get("z") == "Z2"
