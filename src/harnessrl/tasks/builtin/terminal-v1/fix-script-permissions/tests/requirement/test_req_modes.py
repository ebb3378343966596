import stat
from pathlib import Path


def mode(p):
    return stat.S_IMODE(Path(p).stat().st_mode)


def test_modes():
    for f in ("deploy.sh", "lib/common.sh", "run.sh"):
        assert mode(f"/app/scripts/{f}") == 0o755, f
    assert mode("/app/secret.key") == 0o600
