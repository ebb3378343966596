def format_usd(amount):
    sign = "-" if amount < 0 else ""
    return f"{sign}${abs(amount):,.2f}"


def format_eur(amount):
    sign = "-" if amount < 0 else ""
    return f"{sign}€{abs(amount):,.2f}"


def format_gbp(amount):
    sign = "-" if amount < 0 else ""
    return f"{sign}£{abs(amount):,.2f}"
