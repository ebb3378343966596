"""Issue 16: a full disk (ENOSPC) and read-only places, for real: a 256 KiB tmpfs and a read-only bind mount in a
private mount namespace (`unshare -m`, root in CI). One subprocess runs every case in-process with CliRunner."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, os, subprocess, sys
from pathlib import Path
from typer.testing import CliRunner
from harnessrl.cli import app
from harnessrl.records import RecordStore
from tests.helpers import make_episode

work = Path(sys.argv[1])
full, ro = work / "full", work / "ro"
full.mkdir(); ro.mkdir()
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(full)], check=True)
store = RecordStore(work / "store")
store.append([make_episode(i, turns=4, tokens=2000) for i in range(40)])
(ro / "old.jsonl").write_text("precious\n")
RecordStore(ro / "store").append([make_episode(i) for i in range(5)])
subprocess.run(["mount", "--bind", str(ro), str(ro)], check=True)
subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], check=True)
runner = CliRunner()
s = ["--store", str(work / "store")]
cases = {
    "export to a full disk (jsonl)": ["records", "export", str(full / "e.jsonl"), *s],
    "export to a full disk (parquet)": ["records", "export", str(full / "e.parquet"), *s],
    "export onto a read-only file": ["records", "export", str(ro / "old.jsonl"), *s],
    "query --csv read-only": ["records", "query", "SELECT 1 AS x", *s, "--csv", str(ro / "r.csv")],
    "eval --out read-only": ["eval", "-p", "oracle", "--suite", "code-v1", *s, "--out", str(ro / "out")],
    "eval --store read-only": ["eval", "-p", "oracle", "--suite", "code-v1", "--store", str(ro / "store")],
    "eval --seals read-only": ["eval", "-p", "oracle", "--suite", "code-v1", *s, "--sealed", "x", "--seals", str(ro / "seals")],
    "seal --seals read-only": ["seal", "--name", "x", "--seals", str(ro / "seals")],
    "analyze --out read-only": ["analyze", str(work / "store"), "--out", str(ro / "a")],
    "study --out read-only": ["study", "--out", str(ro / "study")],
    "recipe conditioned-critic --store read-only": ["recipe", "conditioned-critic", "--store", str(ro / "store"), "--out", str(work / "cc")],
}
# a store that fills up while an evaluation writes its episodes
fd = os.open(full / "filler", os.O_WRONLY | os.O_CREAT)  # fill the disk, then free one page: room for the manifest only
try:
    while True:
        os.write(fd, b"x" * 4096)
except OSError:
    os.close(fd)
os.truncate(full / "filler", (os.path.getsize(full / "filler") // 4096 - 1) * 4096)
cases["eval fills the disk"] = ["eval", "-p", "oracle", "--suite", "code-v1", "--tasks", "fix-leap-year", "-H", "terminus",
                                "--store", str(full / "store"), "-j", "1"]
out = {}
for name, args in cases.items():
    r = runner.invoke(app, args)
    out[name] = {"code": r.exit_code, "output": r.output, "exception": repr(r.exception) if r.exception and not isinstance(r.exception, SystemExit) else None}
out["files on the full disk"] = sorted(p.name for p in full.iterdir())
out["store files on the full disk"] = sorted(str(p.relative_to(full)) for p in (full / "store").rglob("*")) if (full / "store").exists() else []
out["old.jsonl"] = (ro / "old.jsonl").read_text()
out["ro entries"] = sorted(p.name for p in ro.iterdir())
print(json.dumps(out))
"""


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_full_disk_and_read_only_places_give_one_error_line(tmp_path):
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no mount namespaces here: {probe.stderr.decode().strip()}")
    res = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, "-c", SCRIPT, str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}",
                              "HF_HUB_OFFLINE": "1", "RAY_USAGE_STATS_ENABLED": "0", "HOME": str(tmp_path)})
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    bad = []
    for name, r in out.items():
        if not isinstance(r, dict):
            continue
        lines = [ln for ln in r["output"].splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("error:")]
        if r["code"] != 2 or r["exception"] or "Traceback" in r["output"] or len(errors) != 1:
            bad.append(f"{name}: {r}")
    assert not bad, "\n".join(bad)
    assert "No space left" in out["export to a full disk (jsonl)"]["output"]
    assert "No space left" in out["eval fills the disk"]["output"] and "were not stored" in out["eval fills the disk"]["output"]
    assert "Read-only file system" in out["eval --out read-only"]["output"]
    assert out["files on the full disk"] == ["filler", "store"]  # no 0-byte or partial export left behind
    assert not [f for f in out["store files on the full disk"] if f.startswith("shards/") and f != "shards"]  # no orphan shard
    assert out["old.jsonl"] == "precious\n" and out["ro entries"] == ["old.jsonl", "store"]
