"""`harnessrl recipe multi-harness` end to end at a very small scale: CLI, report, seal, resume."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.config import ConfigError
from harnessrl.evaluate.seal import SealedError, all_seals, verify_seal
from harnessrl.records import RecordStore
from tests.report_checks import assert_report_has_content

SMALL = ["sft_seeds=1", "sft_epochs=1", "updates=2", "seeds=[0]", "group_size=2", "tasks_per_update=2",
         "eval_fraction=0.05", "eval_seeds=1", "tiny_size=micro"]


def invoke(*args: str):
    return CliRunner().invoke(app, ["recipe", "multi-harness", *args], catch_exceptions=False)


@pytest.mark.slow
def test_recipe_runs_from_the_cli_and_writes_its_report(tmp_path):
    out = tmp_path / "mh"
    sets = [x for s in SMALL for x in ("--set", s)]
    res = invoke("--out", str(out), "--workers", "1", *sets)
    assert res.exit_code == 0, res.output
    html = (out / "report.html").read_text()
    assert_report_has_content(html)
    for needle in ("Solve rate on held-out tasks", "lookup-json (sealed)", "RL Within", "RL Cross", "SFT (start)",
                   "Steps per episode and failure modes", "Group-signal fraction", "dropped_requirement",
                   "Within - Cross", "tiny scale", "Verification: intact", "data:image/png;base64",
                   "one frozen manifest of 1140 task-harness records"):
        assert needle in html, needle
    for fig in ("solve_rates.png", "failure_modes.png", "training.png"):
        assert (out / fig).stat().st_size > 1000
    store = RecordStore(out / "store")
    rows = store.sql("SELECT run_id, count(*) AS n FROM episodes GROUP BY run_id").to_pylist()
    counts = {r["run_id"]: r["n"] for r in rows}
    held_out = 20  # 5% of the 400 lookup tasks
    for key in ("sft", "within-s0", "cross-s0"):
        assert counts[f"eval-{key}"] == 3 * held_out and counts[f"sealed-{key}"] == held_out
    assert counts["within-s0"] == counts["cross-s0"] == 2 * 2 * 3 * 2  # updates x tasks x harnesses x G
    # Within and Cross trained on the same frozen task-harness records (seed 2's comparison)
    shared = json.loads((out / "manifest.json").read_text())["sha256"]
    for run in ("within-s0", "cross-s0"):
        assert json.loads((out / "runs" / run / "manifest.json").read_text())["sha256"] == shared
    assert shared[:16] in html
    # RL - SFT on the trained harnesses, paired over held-out tasks: the report's point estimate
    trained = "('lookup-plain','lookup-kv','lookup-brief')"
    per_task = {run: {r["task_id"]: r["p"] for r in store.sql(
        f"SELECT task_id, avg(CAST(success AS DOUBLE)) AS p FROM episodes WHERE run_id = 'eval-{run}' "
        f"AND harness_id IN {trained} GROUP BY task_id").to_pylist()} for run in ("sft", "within-s0")}
    gain = sum(per_task["within-s0"][t] - per_task["sft"][t] for t in per_task["sft"]) / held_out
    gain_html = html.split("Gain over the warm start", 1)[1]
    assert f"{gain:+.3f} [" in gain_html.split("RL Cross", 1)[0]
    # the seal was created before training, evaluated once, and is intact
    (seal,) = all_seals(out / "seals")
    assert seal.harness_ids == {"lookup-json"} and seal.eval_path.exists()
    assert verify_seal(seal.name, store, out / "seals") == []
    entry = json.loads(seal.eval_path.read_text())["entry"]
    assert len(entry["episodes"]) == 3 * held_out

    # training refuses the sealed harness
    from harnessrl.policies.lm import LMConfig
    from harnessrl.train.agent import AgentTrainConfig, AgentTrainer

    with pytest.raises(SealedError, match="lookup-json"):
        AgentTrainer(AgentTrainConfig(policy=LMConfig(model=str(out / "sft")), run_dir=str(tmp_path / "x"),
                                      harnesses=["lookup-plain", "lookup-json"], seals_dir=str(out / "seals")))

    # --resume reuses everything: no new episodes, the sealed evaluation is not written twice
    before = store.count()
    res = invoke("--out", str(out), "--workers", "1", "--resume", *sets)
    assert res.exit_code == 0, res.output
    assert RecordStore(out / "store").count() == before
    # without --resume a used folder is refused
    assert invoke("--out", str(out), *sets).exit_code == 2


def test_recipe_rejects_bad_settings(tmp_path):
    res = invoke("--out", str(tmp_path / "a"), "--scale", "paper")
    assert res.exit_code != 0 and "--model" in res.output
    res = invoke("--out", str(tmp_path / "b"), "--set", "sealed_harness=lookup-kv")
    assert res.exit_code == 2 and "must be unseen" in res.output
    res = invoke("--out", str(tmp_path / "c"), "--set", "train_harnesses=[nope]")
    assert res.exit_code == 2 and "unknown harness" in res.output
    with pytest.raises(ConfigError):
        from harnessrl.recipes.multi_harness import preset

        preset("huge")


@pytest.mark.slow
def test_recipe_with_a_given_model_and_lora(tmp_path):
    """The `--model PATH --lora-rank N` path (what a GPU run uses): LoRA SFT merged into a new base, LoRA RL."""
    from tests import tiny_lm

    model = tiny_lm.build(tmp_path)
    out = tmp_path / "mh"
    sets = [x for s in SMALL for x in ("--set", s)]
    res = invoke("--out", str(out), "--workers", "1", "--model", str(model), "--lora-rank", "4", *sets)
    assert res.exit_code == 0, res.output
    assert not (out / "model").exists()  # no tiny model was built
    assert (out / "sft" / "model.safetensors").exists() and not (out / "sft" / "adapter_config.json").exists()
    for run in ("within-s0", "cross-s0"):
        assert (out / "runs" / run / "final" / "adapter_config.json").exists()
    assert "LoRA rank 4" in (out / "report.html").read_text()
