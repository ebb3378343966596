from tags import add_tag


def test_calls_do_not_share_state():
    assert add_tag("a") == ["a"]
    assert add_tag("b") == ["b"]


def test_fresh_list_each_time():
    first = add_tag("x")
    second = add_tag("y")
    assert first is not second
