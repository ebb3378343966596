import os
import subprocess
from pathlib import Path

EXPECTED = ["category,total", "books,40.25", "games,90.25", "music,24.00"]


def test_summary():
    assert Path("/app/summary.csv").read_text().splitlines() == EXPECTED


def test_the_script_on_the_sales_export():
    assert os.access("/app/sum_by_category", os.X_OK)
    r = subprocess.run(["/app/sum_by_category", "/app/sales.csv"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == EXPECTED
