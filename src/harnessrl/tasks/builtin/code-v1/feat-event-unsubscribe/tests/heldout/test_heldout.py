import pytest
from events import EventBus


def test_unsubscribe_one_of_two():
    bus, seen = EventBus(), []
    a, b = (lambda v: seen.append(("a", v))), (lambda v: seen.append(("b", v)))
    bus.subscribe("t", a)
    bus.subscribe("t", b)
    bus.unsubscribe("t", a)
    bus.emit("t", 7)
    assert seen == [("b", 7)]
    with pytest.raises(ValueError):
        bus.unsubscribe("other", b)


def test_once_on_another_event():
    bus, seen = EventBus(), []
    bus.once("z", seen.append)
    bus.emit("y", 0)
    bus.emit("z", 5)
    bus.emit("z", 6)
    assert seen == [5]
