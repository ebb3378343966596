def parse_line(line):
    return [field.strip() for field in line.rstrip("\n").split(",")]


def load(text):
    lines = [ln for ln in text.splitlines() if ln.strip()]
    header = parse_line(lines[0])
    return [dict(zip(header, parse_line(ln))) for ln in lines[1:]]
