"""Parsers for small text formats."""


def parse_kv(text):
    """"a=1; b=two" -> {"a": "1", "b": "two"}: `;`-separated pairs, spaces around keys and values stripped."""
    out = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        key, _, value = part.partition("=")
        out[key.strip()] = value.strip()
    return out


def parse_int_list(text):
    """"1, 2,3" -> [1, 2, 3]; an empty string gives []."""
    if not text.strip():
        return []
    return [int(x) for x in text.split(",")]


def parse_range_list(text):
    """"1-3,5" -> [1, 2, 3, 5]: comma-separated numbers and inclusive ranges."""
    out = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(part))
    return out


def parse_duration(text):
    """Seconds in "1h30m", "45s", "2m5s" (units h, m, s, in that order, each optional)."""
    total = 0
    number = ""
    units = {"h": 3600, "m": 60, "s": 1}
    for ch in text:
        if ch.isdigit():
            number += ch
        elif ch in units and number:
            total += int(number) * units[ch]
            number = ""
        else:
            raise ValueError(f"bad duration: {text!r}")
    if number:
        raise ValueError(f"missing unit: {text!r}")
    return total


def parse_version(text):
    """"1.10.2" -> (1, 10, 2); a missing part counts as 0 up to three parts: "2" -> (2, 0, 0)."""
    parts = [int(p) for p in text.split(".")]
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


def compare_versions(a, b):
    """-1, 0 or 1 as version string `a` is older than, equal to or newer than `b`."""
    va, vb = parse_version(a), parse_version(b)
    if va < vb:
        return -1
    if va > vb:
        return 1
    return 0


def split_csv_line(line):
    """Fields of one CSV line: commas separate, double quotes group (a doubled quote inside is a quote)."""
    fields, field, quoted, i = [], "", False, 0
    while i < len(line):
        ch = line[i]
        if quoted:
            if ch == '"' and i + 1 < len(line) and line[i + 1] == '"':
                field += '"'
                i += 1
            elif ch == '"':
                quoted = False
            else:
                field += ch
        elif ch == '"':
            quoted = True
        elif ch == ",":
            fields.append(field)
            field = ""
        else:
            field += ch
        i += 1
    fields.append(field)
    return fields


def roman_to_int(text):
    """The value of a Roman numeral ("XIV" -> 14)."""
    values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for i, ch in enumerate(text):
        v = values[ch]
        if i + 1 < len(text) and values[text[i + 1]] > v:
            total -= v
        else:
            total += v
    return total


def int_to_roman(n):
    """The Roman numeral of 1 <= n <= 3999."""
    table = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
             (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
    out = ""
    for value, letters in table:
        while n >= value:
            out += letters
            n -= value
    return out


def parse_bool(text):
    """True for yes/true/on/1, False for no/false/off/0 (any case, spaces stripped); ValueError otherwise."""
    t = text.strip().lower()
    if t in ("yes", "true", "on", "1"):
        return True
    if t in ("no", "false", "off", "0"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def parse_size(text):
    """Bytes in "10", "4K", "2M", "1G" (powers of 1024)."""
    units = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    text = text.strip().upper()
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)
