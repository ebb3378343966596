import csv
import json
import subprocess


def convert(path):
    r = subprocess.run(["/app/json2csv", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return list(csv.reader(r.stdout.splitlines()))


def test_other_users(tmp_path):
    users = [
        {"id": 100, "name": "Dan \"The Man\" Ng", "email": "dan@corp.test", "active": True, "role": "admin"},
        {"id": 9, "name": "Lee", "email": "lee@corp.test", "active": True},
        {"id": 12, "name": "O'Neil, \"Pat\"", "email": "pat@corp.test", "active": True},
        {"id": 11, "name": "Gone", "email": "gone@corp.test", "active": False},
        {"id": 1, "name": "No Flag", "email": "nf@corp.test"},
    ]
    f = tmp_path / "staff.json"
    f.write_text(json.dumps(users, indent=2))
    assert convert(f) == [["id", "name", "email"], ["9", "Lee", "lee@corp.test"],
                          ["12", "O'Neil, \"Pat\"", "pat@corp.test"],
                          ["100", "Dan \"The Man\" Ng", "dan@corp.test"]]


def test_no_active_users(tmp_path):
    f = tmp_path / "none.json"
    f.write_text(json.dumps([{"id": 4, "name": "Ex", "email": "ex@corp.test", "active": False}]))
    assert convert(f) == [["id", "name", "email"]]
