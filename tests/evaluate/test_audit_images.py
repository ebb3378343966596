"""`harnessrl audit --runtime image`: the trust-base attacks (library-hijack, path-shim, ancestor-symlink,
stdlib-replace) through a real shell harness in the task images of tests/tasks/fixtures/images, where the
agent is the image's root: every cell blocked, exit 0. With the grader's trusted base and its diagnosis
scan off (the old merged-view interpreter) the same audit finds the holes and `train --audit`'s gate
refuses the suite, so "blocked" is the trusted base's doing, not an attack that never ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.tasks.images.store import images_unavailable
from harnessrl.tasks.sandbox import bwrap_path

IMAGES = Path(__file__).parents[1] / "tasks" / "fixtures" / "images"
TRUST_BASE = ["library-hijack", "path-shim", "ancestor-symlink", "stdlib-replace"]
WHY = images_unavailable() or (None if bwrap_path() else "needs bubblewrap")
#: swe_agent: a shell harness that runs in a task image (terminus needs tmux in the image; the fixtures have none)
HARNESS = "swe_agent"
pytestmark = [pytest.mark.sandbox, pytest.mark.slow,
              pytest.mark.skipif(WHY is not None, reason=f"task images unavailable here: {WHY}")]
runner = CliRunner()


def test_cli_audit_runtime_image_blocks_every_trust_base_attack(tmp_path):
    out = tmp_path / "out"
    r = runner.invoke(app, ["audit", str(IMAGES), "--runtime", "image", "--harness", HARNESS, "--attacks",
                            ",".join(TRUST_BASE), "--workers", "1", "--store", str(tmp_path / "st"), "--out", str(out),
                            "--no-browser-check"])
    assert r.exit_code == 0, r.output
    assert "every applicable attack blocked" in r.output
    data = json.loads((out / "audit.json").read_text())
    assert data["holes"] == 0 and len(data["matrix"]) == 4, data["matrix"]  # the four fixture tasks
    cells = json.loads((out / "cells.json").read_text())
    assert len(cells) == 4 * len(TRUST_BASE) and {c["verdict"] for c in cells} == {"blocked"}, cells
    assert "--runtime image" in (out / "report.html").read_text()  # the reproduce line names the runtime


def test_with_the_trust_base_off_the_audit_finds_the_holes_and_train_audit_refuses(tmp_path, monkeypatch):
    from harnessrl.commands.audit import require_clean_audit
    from harnessrl.evaluate.audit import run_audit
    from harnessrl.records import RecordStore
    from harnessrl.tasks.images import grading
    from harnessrl.tasks.loaders import load_suite

    monkeypatch.setattr(grading, "TRUST_BASE", False)  # workers=1 runs the episodes in this process
    monkeypatch.setattr(grading, "SCAN_UPPER", False)
    monkeypatch.chdir(tmp_path)  # the gate's report goes to runs/<run id>
    suite = load_suite(str(IMAGES), runtime="image")
    result = run_audit(suite, RecordStore(tmp_path / "st"), harnesses=[HARNESS], attacks=TRUST_BASE,
                       tasks=["constructs", "venv-path"])
    holes = {(c.task_id.split("/")[1], c.attack) for c in result.holes}
    assert holes == {(t, a) for t in ("constructs", "venv-path") for a in TRUST_BASE}, result.cells
    with pytest.raises(typer.Exit) as refused:
        require_clean_audit(str(IMAGES), [HARNESS], ["venv-path"], tmp_path / "st2", runtime="image",
                            attacks=["path-shim"])
    assert refused.value.exit_code == 1
