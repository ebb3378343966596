import os
import subprocess
from pathlib import Path

EXPECTED = ["DEBUG=true", "HOST=0.0.0.0", "LOG_LEVEL=info", "PORT=9000", "SECRET=abc=def"]


def test_env():
    assert Path("/app/.env").read_text().splitlines() == EXPECTED


def test_the_script_on_the_two_files():
    assert os.access("/app/merge_env", os.X_OK)
    r = subprocess.run(["/app/merge_env", "/app/.env.defaults", "/app/.env.local"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == EXPECTED
