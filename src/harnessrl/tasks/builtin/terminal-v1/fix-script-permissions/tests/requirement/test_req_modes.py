import os
import stat
import subprocess
from pathlib import Path


def mode(p):
    return stat.S_IMODE(Path(p).stat().st_mode)


def test_modes():
    for f in ("deploy.sh", "lib/common.sh", "run.sh"):
        assert mode(f"/app/scripts/{f}") == 0o755, f
    assert mode("/app/secret.key") == 0o600


def test_script_on_the_same_layout(tmp_path):
    assert os.access("/app/fix_perms", os.X_OK)
    (tmp_path / "scripts/lib").mkdir(parents=True)
    layout = {"scripts/deploy.sh": 0o644, "scripts/lib/common.sh": 0o644, "scripts/run.sh": 0o644,
              "scripts/notes.txt": 0o640, "secret.key": 0o666}
    for rel, m in layout.items():
        (tmp_path / rel).write_text("x\n")
        (tmp_path / rel).chmod(m)
    r = subprocess.run(["/app/fix_perms", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert {rel: mode(tmp_path / rel) for rel in layout} == {
        "scripts/deploy.sh": 0o755, "scripts/lib/common.sh": 0o755, "scripts/run.sh": 0o755,
        "scripts/notes.txt": 0o640, "secret.key": 0o600}


def test_usage():
    r = subprocess.run(["/app/fix_perms"], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr.lower()
