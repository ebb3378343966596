import hashlib
import subprocess
from pathlib import Path

OUT = Path("/app/out")


def test_extracted_and_manifest():
    lines = (OUT / "MANIFEST.sha256").read_text().splitlines()
    paths = [ln.split("  ", 1)[1] for ln in lines]
    assert paths == ["bin/run.sh", "docs/guide.md", "docs/readme.md"]
    for ln in lines:
        digest, path = ln.split("  ", 1)
        assert hashlib.sha256((OUT / path).read_bytes()).hexdigest() == digest
    assert subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=OUT, capture_output=True).returncode == 0
