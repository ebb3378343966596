import pytest

import containers as m


def test_stack_push_pop_order():
    s = m.Stack()
    for i in (1, 2, 3):
        s.push(i)
    assert s.pop() == 3
    assert s.pop() == 2
    assert s.size() == 1


def test_stack_pop_empty_raises():
    with pytest.raises(IndexError):
        m.Stack().pop()


def test_stack_peek():
    s = m.Stack()
    assert s.peek() is None
    s.push("a")
    s.push("b")
    assert s.peek() == "b"
    assert s.size() == 2


def test_stack_size():
    s = m.Stack()
    assert s.size() == 0
    s.push(None)
    assert s.size() == 1


def test_queue_fifo():
    q = m.BoundedQueue(3)
    q.put(1)
    q.put(2)
    assert q.get() == 1
    assert q.get() == 2
    assert q.get() is None


def test_queue_drops_oldest_when_full():
    q = m.BoundedQueue(2)
    assert q.put("a") is None
    assert q.put("b") is None
    assert q.is_full()
    assert q.put("c") == "a"
    assert q.get() == "b"
    assert not q.is_full()


def test_queue_not_full_below_capacity():
    q = m.BoundedQueue(3)
    q.put(1)
    assert not q.is_full()
    q.put(2)
    q.put(3)
    assert q.is_full()


def test_counter_add_and_total():
    c = m.Counter()
    c.add("x")
    c.add("x", 2)
    c.add("y")
    assert c.counts == {"x": 3, "y": 1}
    assert c.total() == 4


def test_counter_remove():
    c = m.Counter()
    c.add("x", 3)
    c.remove("x")
    assert c.counts == {"x": 2}
    c.remove("x", 2)
    assert c.counts == {}
    c.remove("missing")
    assert c.counts == {}


def test_counter_most_common():
    c = m.Counter()
    for k in "abracadabra":
        c.add(k)
    assert c.most_common(2) == [("a", 5), ("b", 2)]
    assert c.most_common(3) == [("a", 5), ("b", 2), ("r", 2)]
    assert m.Counter().most_common(1) == []


def test_lru_get_put():
    c = m.LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1
    assert c.get("z", "none") == "none"


def test_lru_evicts_least_recent():
    c = m.LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.get("a")
    c.put("c", 3)
    assert c.get("b") is None
    assert c.get("a") == 1
    assert c.get("c") == 3


def test_lru_overwrite_keeps_size():
    c = m.LRUCache(2)
    c.put("a", 1)
    c.put("a", 5)
    c.put("b", 2)
    assert c.get("a") == 5
    assert sorted(c.data) == ["a", "b"]
