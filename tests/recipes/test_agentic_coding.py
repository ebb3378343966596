"""`harnessrl recipe agentic-coding` end to end with a tiny LM built by the recipe: one GSPO update
with a LoRA adapter, external suites before vs after (held-out, terminal-v1, sealed, a Terminal-Bench
folder, and a fresh folder written after training began), seals, report, resume, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.evaluate.seal import SealedError, all_seals, verify_seal
from harnessrl.records import RecordStore
from harnessrl.tasks.base import BUILTIN_DIR
from tests.report_checks import assert_report_has_content

# 2 training tasks in one update of group 2, 1 task per external suite, 1-turn episodes of 16 tokens
SMALL = ["train_tasks=2", "tasks_per_update=2", "group_size=2", "heldout_tasks=1", "sealed_tasks=1", "eval_tasks=1",
         "max_turns=1", "max_new_tokens=16", "lora_rank=2"]
SETS = [x for s in SMALL for x in ("--set", s)]
HARNESS = "qwen_code_3turns"


def invoke(*args: str):
    return CliRunner().invoke(app, ["recipe", "agentic-coding", "--no-browser-check", *args], catch_exceptions=False)


def tb_folder(root: Path) -> Path:
    """One Terminal-Bench-style task (task.yaml, Dockerfile, solution.sh, tests/): our own text."""
    task = root / "write-answer"
    (task / "tests").mkdir(parents=True)
    (task / "task.yaml").write_text("instruction: |\n  Write the number 42 into /app/answer.txt.\ndifficulty: easy\n")
    (task / "Dockerfile").write_text("FROM ghcr.io/example/tb-python:3.13\nRUN apt-get update && apt-get install -y tmux asciinema\nWORKDIR /app\n")
    (task / "solution.sh").write_text("#!/bin/bash\necho 42 > /app/answer.txt\n")
    (task / "tests" / "test_outputs.py").write_text(
        "from pathlib import Path\n\n\ndef test_answer():\n    assert Path('/app/answer.txt').read_text().strip() == '42'\n")
    return root


def fresh_folder(root: Path) -> Path:
    """A suite written now (after training began): a built-in task copied with new file times."""
    (root / "suite.toml").parent.mkdir(parents=True)
    (root / "suite.toml").write_text('[suite]\nname = "fresh-tasks"\nversion = "1"\ndescription = "x"\n\n'
                                     '[defaults]\nkind = "code"\nagent_timeout_s = 600\ntest_timeout_s = 60\n')
    task = shutil.copytree(BUILTIN_DIR / "code-v1" / "fix-leap-year", root / "leap-year-2", copy_function=shutil.copy)
    with open(task / "instruction.md", "a") as f:  # new content: not the built-in task under another name
        f.write("\nKeep the function's name.\n")
    return root


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("agentic")
    out, tb = tmp / "ac", tb_folder(tmp / "tb")
    res = invoke("--out", str(out), "--tb-path", str(tb), *SETS)
    assert res.exit_code == 0, res.output
    return out, tb, res.output


def _counts(out: Path) -> dict[str, int]:
    rows = RecordStore(out / "store").sql("SELECT run_id, count(*) AS n FROM episodes GROUP BY run_id").to_pylist()
    return {r["run_id"]: r["n"] for r in rows}


@pytest.mark.slow
def test_report_has_before_and_after_for_every_external_suite(run):
    out, _, output = run
    html = (out / "report.html").read_text()
    assert_report_has_content(html)
    for needle in ("pass@1 on external suites, before vs after training", "Steps per episode and failure modes",
                   "dropped_requirement", "broke_existing", "format_error", "one epoch of GSPO", "LoRA rank 2",
                   "Sealed split: sealed", "Verification: intact", "data:image/png;base64", "reward_mean", "signal_fraction"):
        assert needle in html, needle
    for suite in ("heldout", "terminal-v1", "sealed", "terminal-bench"):
        assert f"{suite}: pass@1" in output
        assert html.count(f"<td>{suite}</td>") == 4, suite  # pass@1, steps-on-solved, a before and an after failure row
    for fig in ("pass_at_1.png", "failure_modes.png"):
        assert (out / fig).stat().st_size > 1000


@pytest.mark.slow
@pytest.mark.browser
def test_report_renders_in_headless_chromium(run):
    from harnessrl.report.browser import check_report

    out, _, _ = run
    check = check_report(out / "report.html")
    assert check.ok, check.problems()
    assert check.images_total == check.images_loaded == 2 and not check.console_errors


@pytest.mark.slow
def test_episode_counts_match_tasks_times_harness(run):
    out, _, _ = run
    counts = _counts(out)
    tb = next(k for k in counts if k.startswith("before-terminal-bench-"))[len("before-"):]
    for suite in ("heldout", "terminal-v1", "sealed", tb):
        assert counts[f"before-{suite}"] == counts[f"after-{suite}"] == 1 * 1  # tasks x harnesses (x 1 seed)
    assert counts["gspo"] == 2 * 2  # one update: 2 tasks x group 2
    assert (out / "runs" / "gspo" / "final" / "adapter_config.json").exists() or \
        (out / "runs" / "gspo" / "checkpoint").exists()
    eps = RecordStore(out / "store").episodes("run_id LIKE 'after-%'")
    assert {e.context.harness_id for e in eps} == {HARNESS}
    assert all(e.num_turns <= 1 for e in eps)  # max_turns=1 reached evaluation, not only training


@pytest.mark.slow
def test_sealed_split_is_evaluated_once_verified_and_refused_by_training(run, tmp_path):
    out, _, _ = run
    (seal,) = [s for s in all_seals(out / "seals") if "-sealed-" in s.name]
    store = RecordStore(out / "store")
    assert seal.eval_path.exists() and verify_seal(seal.name, store, out / "seals") == []
    entry = json.loads(seal.eval_path.read_text())["entry"]
    assert len(entry["episodes"]) == 2  # before and after, one task x one harness each
    assert {e["episode_id"].split("-")[0] for e in entry["episodes"]} == {"before", "after"}
    # training refuses the sealed task
    from harnessrl.policies.lm import LMConfig
    from harnessrl.train.agent import AgentTrainConfig, AgentTrainer

    (tid,) = seal.task_ids
    with pytest.raises(SealedError, match=tid.split("/")[-1]):
        AgentTrainer(AgentTrainConfig(policy=LMConfig(model=str(out / "model")), run_dir=str(tmp_path / "x"), suite="code-v1",
                                      tasks=[tid], harnesses=[HARNESS], seals_dir=str(out / "seals")))
    # the evaluation is tamper-evident
    copy = tmp_path / "seals"
    shutil.copytree(out / "seals", copy)
    data = json.loads((copy / seal.eval_path.name).read_text())
    data["entry"]["result"]["pass@1"]["after"] = 1.0
    (copy / seal.eval_path.name).write_text(json.dumps(data))
    assert any("edited" in p for p in verify_seal(seal.name, store, copy))


@pytest.mark.slow
def test_resume_adds_no_episodes_then_a_fresh_folder_adds_only_its_own(run, tmp_path):
    out, tb, _ = run
    before = _counts(out)
    res = invoke("--out", str(out), "--tb-path", str(tb), "--resume", *SETS)
    assert res.exit_code == 0, res.output
    assert _counts(out) == before
    assert len(all_seals(out / "seals")) == 2  # the held-out tasks and the held-back slice
    # tasks written after training began, added on --resume: sealed, evaluated once before and after
    fresh = fresh_folder(tmp_path / "fresh")
    res = invoke("--out", str(out), "--tb-path", str(tb), "--sealed-suite", str(fresh), "--resume", *SETS)
    assert res.exit_code == 0, res.output
    counts = _counts(out)
    new = {k: v for k, v in counts.items() if k not in before}
    assert sorted(k.rsplit("-", 1)[0] for k in new) == ["after-fresh", "before-fresh"] and set(new.values()) == {1}
    assert {k: counts[k] for k in before} == before  # nothing retrained or re-evaluated
    seals = {s.name: s for s in all_seals(out / "seals")}
    (fresh_seal,) = [s for s in seals.values() if "fresh" in s.name]
    assert verify_seal(fresh_seal.name, RecordStore(out / "store"), out / "seals") == []
    html = (out / "report.html").read_text()
    assert "Sealed split: fresh" in html and "1 of 1 task folders" in html
    # a changed training setting is refused on resume
    res = invoke("--out", str(out), "--tb-path", str(tb), "--resume", *SETS, "--set", "group_size=3")
    assert res.exit_code == 2 and "group_size" in res.output


@pytest.mark.parametrize("args, needle", [
    (["--eval-suites", "heldout,nope"], "unknown suite 'nope'"),
    (["--eval-suites", "code-v1"], "is the training suite"),
    (["--tb-path", "/no/such/folder"], "--tb-path"),
    (["--set", "harnesses=[aider]", "--eval-suites", "terminal-v1"], "cannot drive task"),
    (["--set", "objective=grpo"], "GSPO"),
    (["--set", "train_tasks=40"], "train_tasks=40"),
])
def test_bad_input_is_one_error_line_exit_2_and_writes_nothing(tmp_path, args, needle):
    out = tmp_path / "o"
    res = invoke("--out", str(out), *args)
    assert res.exit_code == 2, res.output
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], res.output
    assert not out.exists() or not any(out.iterdir())


def test_empty_tb_folder_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    res = invoke("--out", str(tmp_path / "o"), "--tb-path", str(tmp_path / "empty"))
    assert res.exit_code == 2 and "--tb-path" in res.output and res.output.startswith("error:")


def test_paper_preset_is_rank_32_gspo_through_trl():
    from harnessrl.recipes.agentic_coding import AgenticCodingConfig, preset

    cfg = AgenticCodingConfig.model_validate({**preset("paper"), "model": "some/model"})
    assert (cfg.lora_rank, cfg.objective, cfg.engine) == (32, "gspo", "trl")
    assert cfg.n_updates() == 7  # one epoch: ceil(25 / 4)


@pytest.mark.slow
def test_trl_engine_trains_the_lora_adapter_and_reports_like_native(tmp_path):
    """The paper preset's engine (TRL GRPOTrainer, GSPO = sequence-level importance sampling) on the tiny LM."""
    out = tmp_path / "trl"
    res = invoke("--out", str(out), "--engine", "trl", "--eval-suites", "heldout", *SETS)
    assert res.exit_code == 0, res.output
    assert "engine trl" in res.output
    assert (out / "runs" / "gspo" / "final" / "adapter_config.json").exists()
    rows = RecordStore(out / "store").sql("SELECT run_id, json_extract_string(metadata, '$.engine') AS engine, count(*) AS n "
                                          "FROM episodes GROUP BY ALL").to_pylist()
    assert sorted((r["run_id"], r["engine"], r["n"]) for r in rows if r["run_id"] == "gspo") == [("gspo", "trl", 4)]
    assert _counts(out)["after-heldout"] == 1
    assert "pass@1 on external suites" in (out / "report.html").read_text()
