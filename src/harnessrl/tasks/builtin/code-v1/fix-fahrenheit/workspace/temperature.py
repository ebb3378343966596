def to_celsius(fahrenheit):
    return (fahrenheit - 32) * 5 / 9


def to_fahrenheit(celsius):
    return celsius * 9 // 5 + 32


def describe(celsius):
    if celsius < 0:
        return "freezing"
    if celsius < 20:
        return "cold"
    if celsius < 30:
        return "warm"
    return "hot"
