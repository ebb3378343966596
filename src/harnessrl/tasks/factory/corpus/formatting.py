"""Turn values into text for people."""


def thousands(n):
    """An integer with commas between groups of three digits: 1234567 -> "1,234,567"."""
    sign = "-" if n < 0 else ""
    digits = str(abs(n))
    groups = []
    while len(digits) > 3:
        groups.insert(0, digits[-3:])
        digits = digits[:-3]
    groups.insert(0, digits)
    return sign + ",".join(groups)


def human_bytes(n):
    """Bytes with a unit: 512 -> "512 B", 2048 -> "2.0 KiB", ... up to TiB (one decimal)."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    if n < 1024:
        return f"{n} B"
    value = float(n)
    i = 0
    while value >= 1024 and i < len(units) - 1:
        value /= 1024
        i += 1
    return f"{value:.1f} {units[i]}"


def ordinal(n):
    """1 -> "1st", 2 -> "2nd", 3 -> "3rd", 4 -> "4th", 11-13 -> "th", 21 -> "21st"."""
    if 10 <= n % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def plural(count, word, plural_form=None):
    """"1 apple", "2 apples" (or the given plural form)."""
    if count == 1:
        return f"{count} {word}"
    return f"{count} {plural_form or word + 's'}"


def percent(part, whole, digits=1):
    """`part` of `whole` as a percentage string with `digits` decimals; "n/a" when whole is 0."""
    if whole == 0:
        return "n/a"
    return f"{100 * part / whole:.{digits}f}%"


def join_names(names):
    """"a", "a and b", "a, b and c"."""
    if not names:
        return ""
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


def table_row(cells, widths):
    """Cells left-aligned in columns of the given widths, separated by " | " (long cells are not cut)."""
    return " | ".join(str(c).ljust(w) for c, w in zip(cells, widths))


def money(cents, symbol="$"):
    """Integer cents as money: 123456 -> "$1,234.56", -5 -> "-$0.05"."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{symbol}{thousands(cents // 100)}.{cents % 100:02d}"


def elapsed(seconds):
    """A rough age: "just now" (< 60 s), "N minutes ago", "N hours ago", "N days ago" (singular for 1)."""
    if seconds < 60:
        return "just now"
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def wrap(text, width):
    """Words of `text` greedily packed into lines of at most `width` characters (a longer word gets its own line)."""
    lines, line = [], ""
    for word in text.split():
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines
