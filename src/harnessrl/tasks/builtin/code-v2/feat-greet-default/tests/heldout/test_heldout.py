import inspect

from hello import greet


def test_default_is_keyword_too():
    assert greet(name="Bo") == "Hello, Bo!"
    assert inspect.signature(greet).parameters["name"].default == "world"
