import os
import subprocess
from pathlib import Path

TOP3 = ["Bob\t100.00", "Dee\t60.75", "Ann\t50.75"]


def run(*args):
    return subprocess.run(["/app/top_customers", *args], capture_output=True, text=True)


def test_report():
    assert Path("/app/top_customers.txt").read_text().splitlines() == TOP3


def test_script_on_the_shop():
    assert os.access("/app/top_customers", os.X_OK)
    r = run("/app/shop.db", "3")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == TOP3
    assert run("/app/shop.db", "1").stdout.splitlines() == TOP3[:1]
    everyone = run("/app/shop.db", "10").stdout.splitlines()
    assert everyone == [*TOP3, "Eve\t20.00", "Cy\t5.00"]


def test_usage():
    r = run("/app/shop.db")
    assert r.returncode == 2 and "usage" in r.stderr.lower()
    assert run().returncode == 2
