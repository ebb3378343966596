"""`harnessrl train agent --engine trl`: the native run options, inside TRL's GRPOTrainer."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.records import RecordStore
from tests import tiny_lm


@pytest.mark.slow
def test_train_agent_engine_trl_runs_on_a_real_suite(tmp_path):
    model = tiny_lm.build(tmp_path)
    args = ["train", "agent", "--engine", "trl", "--model", str(model), "--run-dir", str(tmp_path / "run"),
            "--set", "harnesses=[lookup-plain,lookup-kv]", "--set", "tasks=[lookup/000]", "--set", "group_size=2",
            "--set", "tasks_per_update=1", "--set", "updates=1", "--set", "policy.max_new_tokens=6",
            "--set", "trl.gradient_checkpointing=false"]
    res = CliRunner().invoke(app, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "engine trl" in res.output and (tmp_path / "run" / "metrics.csv").exists()
    eps = RecordStore(tmp_path / "run" / "store").episodes()
    assert len(eps) == 4 and {e.metadata["engine"] for e in eps} == {"trl"}
    assert {e.context.harness_id for e in eps} == {"lookup-plain", "lookup-kv"}
    res = CliRunner().invoke(app, args)  # a used run folder needs --resume
    assert res.exit_code == 2 and "--resume" in res.output


def test_engine_errors_are_user_errors(tmp_path):
    res = CliRunner().invoke(app, ["train", "agent", "--engine", "ray", "--model", "m", "--set", "harnesses=[a]"])
    assert res.exit_code == 2 and "--engine 'ray'" in res.output
    res = CliRunner().invoke(app, ["train", "agent", "--engine", "trl", "--model", "m", "--set", "harnesses=[a,b]",
                                   "--set", "objective=rloo"])
    assert res.exit_code == 2 and "objective: 'rloo' has no GRPOTrainer equivalent" in res.output
