def read_records(lines):
    records = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        level, _, message = line.partition(" ")
        records.append({"level": level, "message": message})
    return records


def count_levels(lines):
    counts = {}
    for record in read_records(lines):
        counts[record["level"]] = counts.get(record["level"], 0) + 1
    return counts
