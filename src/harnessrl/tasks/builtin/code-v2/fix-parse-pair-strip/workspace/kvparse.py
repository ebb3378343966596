def parse_pair(line):
    key, value = line.split("=", 1)
    return key, value


def parse_lines(text):
    return dict(parse_pair(line) for line in text.splitlines() if "=" in line)
