from hello import greet


def test_default():
    assert greet() == "Hello, world!"
