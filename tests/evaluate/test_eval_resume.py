"""A run id holds each evaluation cell once: `harnessrl eval` refuses a used run id (or a used --out)
in one error line, and `--resume` runs only the missing cells, so a killed evaluation resumed ends
with the same cells as an uninterrupted one, each stored once. The lookup suite needs no sandbox."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.records import MANIFEST, RecordStore

runner = CliRunner()
SRC = str(Path(__file__).parents[2] / "src")
LOOKUP = ["--policy", "oracle", "--suite", "lookup", "--harness", "lookup-plain,lookup-kv", "--workers", "1"]


def _eval(*args):
    return runner.invoke(app, ["eval", *LOOKUP, *args])


def _cells(store: Path, run_id: str) -> list[tuple]:
    """Every stored (task, harness, seed, success) of the run, duplicates kept."""
    t = RecordStore(store, create=False).sql(
        "SELECT task_id, harness_id, seed, success FROM episodes WHERE run_id = ? ORDER BY ALL", [run_id])
    return [tuple(r.values()) for r in t.to_pylist()]


def _committed(store: Path) -> list[str]:
    return (store / MANIFEST).read_text().splitlines() if (store / MANIFEST).exists() else []


def test_a_used_run_id_or_out_folder_is_refused_in_one_line_and_the_store_is_unchanged(tmp_path):
    store, out = tmp_path / "st", tmp_path / "out"
    r = _eval("--tasks", "0,1", "--run-id", "r1", "--store", str(store), "--out", str(out))
    assert r.exit_code == 0, r.output
    before = _committed(store)
    assert len(_cells(store, "r1")) == 4
    for extra in (["--run-id", "r1"], ["--out", str(out)], ["--run-id", "r1", "--out", str(tmp_path / "other")]):
        r = _eval("--tasks", "0,1", "--store", str(store), *extra)
        assert r.exit_code == 2, r.output
        errors = [ln for ln in r.output.splitlines() if ln.strip()]
        assert len(errors) == 1 and errors[0].startswith("error:") and "--resume" in errors[0], r.output
        assert _committed(store) == before  # nothing was stored
    assert not (tmp_path / "other").exists()
    # --resume of a run with another policy is refused too: one run, one policy
    r = runner.invoke(app, ["eval", "--policy", "noop", *LOOKUP[2:], "--tasks", "0,1", "--run-id", "r1", "--store",
                            str(store), "--resume"])
    assert r.exit_code == 2 and "evaluated with policy oracle" in r.output and _committed(store) == before
    r = _eval("--tasks", "0", "--store", str(store), "--resume")
    assert r.exit_code == 2 and "--resume needs the run to continue" in r.output


def test_resume_after_a_partial_run_stores_each_cell_once_like_an_uninterrupted_run(tmp_path):
    store = tmp_path / "st"
    r = _eval("--tasks", "0,1,2,3", "--seeds", "2", "--run-id", "full", "--store", str(store))
    assert r.exit_code == 0, r.output
    # the "interrupted" run: only part of the tasks made it into the store
    r = _eval("--tasks", "1,3", "--seeds", "2", "--run-id", "cut", "--store", str(store), "--out", str(tmp_path / "out"))
    assert r.exit_code == 0, r.output
    assert len(_cells(store, "cut")) == 8
    # resumed from its --out folder alone: the run id comes from out/eval.json
    r = _eval("--tasks", "0,1,2,3", "--seeds", "2", "--store", str(store), "--out", str(tmp_path / "out"), "--resume")
    assert r.exit_code == 0, r.output
    assert "8 of them stored before, not run again" in r.output
    assert _cells(store, "cut") == _cells(store, "full") and len(_cells(store, "full")) == 16
    data = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert data["run_id"] == "cut" and {row["episodes"] for row in data["summary"]} == {8}
    # a finished run resumed again runs nothing and stores nothing
    before = _committed(store)
    r = _eval("--tasks", "0,1,2,3", "--seeds", "2", "--run-id", "cut", "--store", str(store), "--resume")
    assert r.exit_code == 0 and _committed(store) == before, r.output
    r = runner.invoke(app, ["records", "verify", "--store", str(store)])
    assert r.exit_code == 0, r.output


def test_an_eval_killed_with_sigkill_resumes_to_each_cell_once(tmp_path):
    store, seeds = tmp_path / "st", 4
    env = {**os.environ, "PYTHONPATH": SRC, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "harnessrl.cli", "eval", "--policy", "oracle", "--suite", "lookup",
                             "--harness", "lookup-plain", "--seeds", str(seeds), "--workers", "1", "--run-id", "k",
                             "--store", str(store)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(_committed(store)) < 1 + 20 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)  # one shard per episode with one worker: kill once some are committed
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    total = 400 * seeds
    stored = len(_cells(store, "k"))
    assert 0 < stored < total, f"the eval was not killed midway ({stored} of {total} stored)"
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", "lookup", "--harness", "lookup-plain", "--seeds",
                            str(seeds), "--workers", "1", "--run-id", "k", "--store", str(store), "--resume"])
    assert r.exit_code == 0, r.output
    cells = _cells(store, "k")
    assert len(cells) == total and len({c[:3] for c in cells}) == total and all(c[3] for c in cells)
