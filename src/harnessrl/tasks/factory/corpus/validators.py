"""Checks for common identifiers and formats."""


def luhn_valid(number):
    """True when the digit string passes the Luhn checksum (spaces ignored)."""
    digits = [int(c) for c in number.replace(" ", "")]
    if len(digits) < 2:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def isbn10_valid(text):
    """True for a valid ISBN-10 (hyphens ignored; the last character may be X for 10)."""
    chars = text.replace("-", "")
    if len(chars) != 10:
        return False
    total = 0
    for i, ch in enumerate(chars):
        if ch == "X" and i == 9:
            value = 10
        elif ch.isdigit():
            value = int(ch)
        else:
            return False
        total += (10 - i) * value
    return total % 11 == 0


def is_email(text):
    """A plain check: one @, a non-empty local part, a domain with a dot not at either end."""
    if text.count("@") != 1:
        return False
    local, domain = text.split("@")
    if not local or "." not in domain:
        return False
    return not domain.startswith(".") and not domain.endswith(".")


def is_ipv4(text):
    """Four dot-separated decimal numbers 0-255 without leading zeros."""
    parts = text.split(".")
    if len(parts) != 4:
        return False
    for p in parts:
        if not p.isdigit() or int(p) > 255:
            return False
        if len(p) > 1 and p[0] == "0":
            return False
    return True


def is_hex_color(text):
    """"#rgb" or "#rrggbb" with hex digits (any case)."""
    if not text.startswith("#") or len(text) not in (4, 7):
        return False
    return all(c in "0123456789abcdefABCDEF" for c in text[1:])


def password_strength(password):
    """0-4: one point each for length >= 8, a digit, an upper-case letter, a non-alphanumeric character."""
    score = 0
    if len(password) >= 8:
        score += 1
    if any(c.isdigit() for c in password):
        score += 1
    if any(c.isupper() for c in password):
        score += 1
    if any(not c.isalnum() for c in password):
        score += 1
    return score


def balanced_brackets(text):
    """True when (), [] and {} in `text` are balanced and properly nested."""
    pairs = {")": "(", "]": "[", "}": "{"}
    stack = []
    for ch in text:
        if ch in "([{":
            stack.append(ch)
        elif ch in pairs:
            if not stack or stack[-1] != pairs[ch]:
                return False
            stack.pop()
    return not stack


def is_identifier(text):
    """A letter or underscore, then letters, digits or underscores (ASCII only)."""
    if not text:
        return False
    first = text[0]
    if not (first.isascii() and (first.isalpha() or first == "_")):
        return False
    return all(c.isascii() and (c.isalnum() or c == "_") for c in text[1:])


def is_leap_second_time(text):
    """True for "HH:MM:SS" with HH 00-23, MM 00-59 and SS 00-60 (60: a leap second)."""
    parts = text.split(":")
    if len(parts) != 3 or not all(len(p) == 2 and p.isdigit() for p in parts):
        return False
    h, mi, s = (int(p) for p in parts)
    return h <= 23 and mi <= 59 and s <= 60
