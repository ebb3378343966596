from hello import greet, greet_all


def test_none_and_empty():
    assert greet(None) == "Hello, world!"
    assert greet(name=None) == "Hello, world!"
    assert greet("") == "Hello, !"
    assert greet_all([None, "Bo"]) == ["Hello, world!", "Hello, Bo!"]
