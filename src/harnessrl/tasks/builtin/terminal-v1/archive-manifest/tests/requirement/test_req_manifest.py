import hashlib
import os
import subprocess
from pathlib import Path

OUT = Path("/app/out")
PATHS = ["bin/run.sh", "docs/guide.md", "docs/readme.md"]


def check_manifest(out):
    lines = (out / "MANIFEST.sha256").read_text().splitlines()
    assert [ln.split("  ", 1)[1] for ln in lines] == PATHS
    for ln in lines:
        digest, path = ln.split("  ", 1)
        assert hashlib.sha256((out / path).read_bytes()).hexdigest() == digest
    assert subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=out, capture_output=True).returncode == 0


def test_extracted_and_manifest():
    assert (OUT / "docs/readme.md").read_text() == "hello\n"
    check_manifest(OUT)


def test_script_on_the_bundle(tmp_path):
    assert os.access("/app/extract_manifest", os.X_OK)
    r = subprocess.run(["/app/extract_manifest", "/app/bundle.tar.gz", str(tmp_path / "again")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    check_manifest(tmp_path / "again")
    assert (tmp_path / "again/MANIFEST.sha256").read_text() == (OUT / "MANIFEST.sha256").read_text()


def test_usage():
    r = subprocess.run(["/app/extract_manifest", "/app/bundle.tar.gz"], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr.lower()
