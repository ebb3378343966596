def greet(name=None):
    return f"Hello, {name}!"


def greet_all(names):
    return [greet(n) for n in names]
