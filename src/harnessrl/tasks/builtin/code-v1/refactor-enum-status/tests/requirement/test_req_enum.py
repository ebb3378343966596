import enum

from orders import Status, next_status


def test_enum_members():
    assert issubclass(Status, enum.Enum) and issubclass(Status, str)
    assert [s.value for s in Status] == ["new", "paid", "shipped", "cancelled"]


def test_next_status_returns_members():
    assert next_status(Status.NEW) is Status.PAID
    assert next_status("paid") is Status.SHIPPED
