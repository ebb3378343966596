def farewell(name):
    return "Goodbye, " + name + "."


def greet(name):
    return "Hello " + name
