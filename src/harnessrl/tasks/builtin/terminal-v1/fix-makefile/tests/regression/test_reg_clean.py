import subprocess
from pathlib import Path


def test_clean_and_sources():
    subprocess.run(["make", "-C", "/app", "clean"], check=True, capture_output=True)
    assert not Path("/app/bin/calc").exists() and not list(Path("/app/src").glob("*.o"))
    assert Path("/app/src/main.c").exists() and Path("/app/src/ops.c").exists()
