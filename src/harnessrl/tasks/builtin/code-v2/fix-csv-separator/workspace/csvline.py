def to_csv_line(fields):
    return ";".join(str(f) for f in fields)


def from_csv_line(line):
    return line.split(",")
