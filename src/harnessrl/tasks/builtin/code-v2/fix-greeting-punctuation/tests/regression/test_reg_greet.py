from greet import farewell


def test_farewell():
    assert farewell("Bo") == "Goodbye, Bo."
