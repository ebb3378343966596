import csv
import os
import subprocess
from pathlib import Path

EXPECTED = [["id", "name", "email"], ["2", "Smith, Ann", "ann@example.com"],
            ["3", "Cy", "cy@example.com"], ["10", "Zoe", "zoe@example.com"]]


def test_csv():
    rows = list(csv.reader(Path("/app/users.csv").read_text().splitlines()))
    assert rows == EXPECTED


def test_the_script_on_the_users_file():
    assert os.access("/app/json2csv", os.X_OK)
    r = subprocess.run(["/app/json2csv", "/app/users.json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert list(csv.reader(r.stdout.splitlines())) == EXPECTED
