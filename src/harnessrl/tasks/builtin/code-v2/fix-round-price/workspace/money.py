def round_price(x):
    return int(x)


def format_price(x):
    return f"{round_price(x):.2f}"
