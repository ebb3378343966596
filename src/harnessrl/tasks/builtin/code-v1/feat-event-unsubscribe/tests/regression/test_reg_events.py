from events import EventBus


def test_emit_collects_results():
    bus = EventBus()
    bus.subscribe("sum", lambda a, b: a + b)
    bus.subscribe("sum", lambda a, b: a * b)
    assert bus.emit("sum", 2, 3) == [5, 6]
    assert bus.emit("none") == []
