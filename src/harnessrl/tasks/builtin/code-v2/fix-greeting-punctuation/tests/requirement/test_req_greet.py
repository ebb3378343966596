from greet import greet


def test_greet_ada():
    assert greet("Ada") == "Hello, Ada!"
