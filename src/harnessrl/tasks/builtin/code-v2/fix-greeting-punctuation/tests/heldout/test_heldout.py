from greet import greet


def test_other_names():
    assert greet("Grace Hopper") == "Hello, Grace Hopper!"
    assert greet("") == "Hello, !"
