import pytest
from events import EventBus


def test_unsubscribe():
    bus, seen = EventBus(), []
    h = seen.append
    bus.subscribe("x", h)
    bus.emit("x", 1)
    bus.unsubscribe("x", h)
    bus.emit("x", 2)
    assert seen == [1]
    with pytest.raises(ValueError):
        bus.unsubscribe("x", h)


def test_once_runs_once_in_order():
    bus, seen = EventBus(), []
    bus.subscribe("e", lambda v: seen.append(("a", v)))
    bus.once("e", lambda v: seen.append(("once", v)))
    bus.subscribe("e", lambda v: seen.append(("b", v)))
    bus.emit("e", 1)
    bus.emit("e", 2)
    assert seen == [("a", 1), ("once", 1), ("b", 1), ("a", 2), ("b", 2)]
