from orders import Status, next_status


def test_other_transitions():
    assert next_status("new") is Status.PAID
    assert next_status(Status.PAID) is Status.SHIPPED
    assert Status("cancelled") is Status.CANCELLED and Status.SHIPPED == "shipped"
