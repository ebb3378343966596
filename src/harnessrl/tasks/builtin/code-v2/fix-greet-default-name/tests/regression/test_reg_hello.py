from hello import greet, greet_all


def test_named():
    assert greet("Ada") == "Hello, Ada!"
    assert greet_all(["a", "b"]) == ["Hello, a!", "Hello, b!"]
