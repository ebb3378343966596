import re

UNITS = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text):
    match = re.match(r"(\d+)([hms])", text.strip())
    if not match:
        raise ValueError(f"not a duration: {text!r}")
    return int(match.group(1)) * UNITS[match.group(2)]


def format_duration(seconds):
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v) or "0s"
