import pytest
from cache import LRUCache


def test_within_capacity():
    c = LRUCache(3)
    for k, v in [("x", 1), ("y", 2)]:
        c.put(k, v)
    assert len(c) == 2 and c.get("x") == 1 and c.get("z", "none") == "none"


def test_capacity_validated():
    with pytest.raises(ValueError):
        LRUCache(0)
