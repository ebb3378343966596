"""The agentic-coding recipe's probe and task choice (`gspo_tasks=sometimes`), the readable-edit
teacher (`sft_teacher=oracle-edit`) and OUT/results.json. Fast tests run the real pieces (the
choice rule, the teacher's shell commands under bash); the end-to-end run uses the tiny LM."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.harness.base import load_spec, make_harness
from harnessrl.records import RecordStore
from harnessrl.recipes.agentic_coding_episodes import choose_tasks
from harnessrl.recipes.agentic_coding_teacher import EditOracle, edit_command, edit_turns
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.tasks.sandbox import bwrap_path
from harnessrl.train.tasks import load_tasks


def test_choice_keeps_every_mixed_task_then_tops_up_nearest_one_half():
    rates = {"a": 0.0, "b": 0.25, "c": 1.0, "d": 0.0, "e": 0.75, "f": 0.5}
    assert choose_tasks(rates, 2) == {"b": "mixed", "e": "mixed", "f": "mixed"}  # never fewer than the mixed ones
    assert choose_tasks({"a": 0.0, "b": 0.25, "c": 1.0, "d": 0.0}, 3) == {"b": "mixed", "c": "top-up", "a": "top-up"}
    assert choose_tasks({"a": 0.0, "b": 0.0, "c": 0.0}, 2) == {"a": "top-up", "b": "top-up"}  # ties: split order
    assert choose_tasks({"a": 0.0}, 4) == {"a": "top-up"}


def test_edit_command_applies_every_code_v2_reference_edit_under_bash(tmp_path):
    """The teacher's edit, run by bash exactly as the agent program would, gives the oracle's file."""
    tasks = load_tasks("code-v2")
    assert len(tasks) >= 30
    for task in tasks:
        (step,) = task.solution.steps
        work = tmp_path / task.id.split("/")[-1]
        shutil.copytree(Path(task.root) / "workspace", work)
        before = (work / step.path).read_text()
        out = subprocess.run(["bash", "-c", edit_command(str(work / step.path), step.old, step.new)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, (task.id, out.stderr)
        assert (work / step.path).read_text() == before.replace(step.old, step.new, 1) != before, task.id


def test_edit_turns_read_each_file_once_then_edit_then_submit():
    from harnessrl.harness.base import Intent

    turns = edit_turns([Intent("replace", path="a.py", old="x", new="y"), Intent("replace", path="a.py", old="p", new="q")])
    assert len(turns) == 4 and "cat /app/a.py" in turns[0] and "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in turns[-1]
    assert all(t.count("```mswea_bash_command") == 1 for t in turns)  # one block per reply: the program's rule
    assert edit_turns([Intent("write", path="a.py", content="x")]) is None  # the plain oracle renders writes


@pytest.mark.sandbox
@pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0, reason="needs bubblewrap and root (per-episode network namespace)")
def test_edit_oracle_solves_code_v2_through_a_program_speaking_mini_swe_agents_protocol():
    """The tests' stand-in program (tests/harness/programs/mini_text.py) runs each command in the task's sandbox."""
    program = Path(__file__).parents[1] / "harness" / "programs" / "mini_text.py"
    harness = make_harness(load_spec("mini-swe-agent", ["options.program=script", f"options.script={program}"]))
    eps = run_group(EditOracle(), [RolloutItem(harness, t, 0) for t in load_tasks("code-v2")[:2]], run_id="t")
    assert [(e.success, e.num_turns) for e in eps] == [(True, 3)] * 2, [(e.context.task_id, e.outcome) for e in eps]
    assert all("python3 - <<'EOF'" in e.turns[1].action and "base64" not in e.turns[1].action for e in eps)


def test_sometimes_without_a_probe_is_one_error_line(tmp_path):
    res = CliRunner().invoke(app, ["recipe", "agentic-coding", "--no-browser-check", "--out", str(tmp_path / "o"),
                                   "--set", "gspo_tasks=sometimes"], catch_exceptions=False)
    assert res.exit_code == 2, res.output
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "probe_samples" in lines[0], res.output


SMALL = ["suite=code-v2", "warm_start=true", "rl_seeds=[0,1]", "sft_seeds=1", "sft_epochs=1", "train_tasks=3",
         "tasks_per_update=2", "group_size=2", "heldout_tasks=2", "sealed_tasks=1", "max_turns=1", "max_new_tokens=8",
         "lora_rank=2", "gspo_tasks=sometimes", "probe_samples=2"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("probe") / "ac"
    res = CliRunner().invoke(app, ["recipe", "agentic-coding", "--no-browser-check", "--harness", "swe_agent",
                                   "--eval-suites", "heldout", "--out", str(out), *[x for s in SMALL for x in ("--set", s)]],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return out


@pytest.mark.slow
def test_probe_picks_the_gspo_tasks_and_results_json_has_every_measure(run):
    out = run
    store = RecordStore(out / "store")
    probe = store.episodes("run_id = 'probe'")
    assert len(probe) == 3 * 2 and {e.context.seed for e in probe} == {20_000, 20_001}  # tasks x probe_samples
    res = json.loads((out / "results.json").read_text())
    rows = res["probe"]["rows"]
    assert len(rows) == 3 and all(r["solved"].endswith("/2") for r in rows)
    rates = {r["task"]: r["rate"] for r in rows}
    want = choose_tasks(rates, 2)
    assert res["gspo"]["why"] == want and res["gspo"]["updates_per_seed"] == 1
    trained = {e.context.task_id for e in store.episodes("run_id IN ('gspo', 'gspo-s1')")}
    assert trained == set(want)  # GSPO drew only the chosen tasks
    assert [u["seed"] for u in res["gspo"]["per_update"]] == [0, 1]
    assert all(0.0 <= u["signal_fraction"] <= 1.0 for u in res["gspo"]["per_update"])
    heldout = res["suites"]["heldout"]
    assert len(heldout["tasks"]) == 2
    p = heldout["by_harness"]["all"]["pass@1"]
    assert set(p) == {"base", "sft", "gspo", "gspo-s0", "gspo-s1"}
    assert all(set(v) == {"value", "lo", "hi", "tasks"} and v["lo"] <= v["value"] <= v["hi"] for v in p.values())
    assert {"gspo-s0 - sft", "gspo-s1 - base", "gspo - sft", "sft - base"} <= set(heldout["by_harness"]["all"]["change"])
    assert "base -> gspo" in heldout["steps_on_tasks_solved_both"]
    assert {r["policy"] for r in res["failure_modes"]} == {"base", "SFT", "SFT+GSPO"}
    assert res["wall_s"] > 0 and res["peak_rss_gb"] > 0 and res["config"]["probe_samples"] == 2
    assert res["command"].startswith("harnessrl ")
    html = (out / "report.html").read_text()
    assert "Probe before GSPO" in html and "chosen by the probe" in html
