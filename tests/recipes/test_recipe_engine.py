"""The LM recipes on TRL's GRPOTrainer (`--engine trl`, recipes/engine.py): same records, same report."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.records import RecordStore
from tests.report_checks import assert_report_has_content

SMALL = ["sft_seeds=1", "sft_epochs=1", "updates=2", "seeds=[0]", "group_size=2", "tasks_per_update=2",
         "eval_fraction=0.05", "eval_seeds=1", "tiny_size=micro"]
SETS = [x for s in SMALL for x in ("--set", s)]


def invoke(*args: str):
    return CliRunner().invoke(app, ["recipe", *args], catch_exceptions=False)


@pytest.mark.slow
def test_multi_harness_recipe_trains_through_trl_and_reports_like_native(tmp_path):
    out = tmp_path / "mh"
    res = invoke("multi-harness", "--out", str(out), "--workers", "1", "--engine", "trl", *SETS)
    assert res.exit_code == 0, res.output
    assert "engine trl" in res.output
    html = (out / "report.html").read_text()
    assert_report_has_content(html)
    for needle in ("RL Within", "RL Cross", "Group-signal fraction", "Verification: intact"):
        assert needle in html, needle
    store = RecordStore(out / "store")
    rows = store.sql("SELECT run_id, json_extract_string(metadata, '$.engine') AS engine, count(*) AS n "
                     "FROM episodes WHERE run_id IN ('within-s0', 'cross-s0') GROUP BY ALL").to_pylist()
    # the same work per update as the native trainer: updates x tasks x harnesses x G, every episode from TRL
    assert sorted((r["run_id"], r["engine"], r["n"]) for r in rows) == [("cross-s0", "trl", 24), ("within-s0", "trl", 24)]
    held_out = 20
    counts = {r["run_id"]: r["n"] for r in store.sql("SELECT run_id, count(*) AS n FROM episodes GROUP BY run_id").to_pylist()}
    assert counts["eval-within-s0"] == counts["eval-cross-s0"] == 3 * held_out  # the trained weights were evaluated
    # metrics rows carry the native column names the report reads
    done = json.loads((out / "runs" / "within-s0" / "final" / "done.json").read_text())
    assert [r["update"] for r in done["logged"]] == [1, 2]
    before = store.count()
    res = invoke("multi-harness", "--out", str(out), "--workers", "1", "--engine", "trl", "--resume", *SETS)
    assert res.exit_code == 0, res.output
    assert RecordStore(out / "store").count() == before  # finished runs are reused, not retrained


@pytest.mark.slow
def test_trl_engine_continues_a_lora_adapter_through_merged_weights(tmp_path):
    """Further training from a saved LoRA run (the study's further rounds) under TRL: the start adapter is
    merged into a model folder first (GRPOTrainer starts a fresh adapter), then trained and saved as one."""
    from harnessrl.policies.lm import LMConfig, LMPolicy
    from harnessrl.recipes.engine import train_agent
    from harnessrl.train.agent import AgentTrainConfig
    from harnessrl.train.tasks import load_tasks
    from tests import tiny_lm

    model = tiny_lm.build(tmp_path)
    start = LMPolicy.from_config(LMConfig(model=str(model), lora_rank=4)).save(tmp_path / "start")
    tasks = load_tasks("lookup", None)[:4]
    cfg = AgentTrainConfig(policy=LMConfig(model=str(model), lora_rank=4, adapter=str(start)), run_dir=str(tmp_path / "run"),
                           store=str(tmp_path / "store"), run_id="further", suite="lookup", tasks=[t.task_id for t in tasks],
                           harnesses=["lookup-plain"], group_size=2, tasks_per_update=2, updates=2, micro_batch_tokens=4096)
    seen: list[int] = []
    trained = train_agent(cfg, tasks, "trl", on_update=lambda r: seen.append(r["update"]))
    assert seen == [1, 2] and [r["update"] for r in trained.rows] == [1, 2]
    assert all(r["episodes"] == 4 and "solve/lookup-plain" in r and 0 <= r["signal_fraction"] <= 1 for r in trained.rows)
    assert (tmp_path / "run" / "start-merged" / "config.json").exists()
    assert (tmp_path / "run" / "final" / "adapter_config.json").exists() and trained.policy.is_lora
    assert RecordStore(tmp_path / "store").count() == 8


def test_engine_is_checked_and_paper_scale_uses_trl(tmp_path):
    res = invoke("harness-teacher", "--out", str(tmp_path / "a"), "--engine", "deepspeed")
    assert res.exit_code == 2 and "engine" in res.output
    from harnessrl.recipes import harness_teacher, multi_harness

    assert multi_harness.MultiHarnessConfig(**multi_harness.preset("paper"), model="m").engine == "trl"
    assert harness_teacher.HarnessTeacherConfig(**harness_teacher.preset("paper"), model="m").engine == "trl"
    assert multi_harness.MultiHarnessConfig(**multi_harness.preset("small")).engine == "native"
