import csv
from pathlib import Path


def test_csv():
    rows = list(csv.reader(Path("/app/users.csv").read_text().splitlines()))
    assert rows == [["id", "name", "email"], ["2", "Smith, Ann", "ann@example.com"],
                    ["3", "Cy", "cy@example.com"], ["10", "Zoe", "zoe@example.com"]]
