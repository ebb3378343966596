"""`report_to` (TRL's name) in every training config and LM recipe; a real 2-update run writes TensorBoard and trackio logs
offline, and the TRL engine passes the same list to GRPOTrainer."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.train.agent import AgentTrainConfig
from tests import tiny_lm


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_lm.build(tmp_path_factory.mktemp("tracking"))


def _scalars(event_dir, tag: str) -> list[tuple[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(event_dir))
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def test_two_update_run_writes_tensorboard_and_trackio_offline(model_dir, tmp_path, monkeypatch):
    import csv
    import uuid

    run_id = f"tracked-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("TRACKIO_DIR", str(tmp_path / "trackio"))  # trackio's local store (read when it is first imported)
    run = tmp_path / "run"
    res = CliRunner().invoke(app, [
        "train", "agent", "--model", str(model_dir), "--out", str(run), "--set", "report_to=[tensorboard,trackio]",
        "--set", f"run_id={run_id}",
        "--set", "harnesses=[lookup-plain]", "--set", "tasks=[lookup/000]", "--set", "group_size=2",
        "--set", "tasks_per_update=1", "--set", "updates=2", "--set", "policy.max_new_tokens=6"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    logged = _scalars(run / "tensorboard", "reward_mean")
    assert [step for step, _ in logged] == [1, 2]
    assert [round(v, 6) for _, v in logged] == [round(float(r["reward_mean"]), 6) for r in rows]  # the same numbers
    from trackio.sqlite_storage import SQLiteStorage

    tracked = SQLiteStorage.get_logs("harnessrl", run_id)  # the run's name in trackio is its run_id
    assert [row["step"] for row in tracked] == [1, 2]
    assert [round(row["reward_mean"], 6) for row in tracked] == [round(float(r["reward_mean"]), 6) for r in rows]


def test_report_to_takes_trl_spellings_and_the_old_booleans():
    base = {"policy": {"model": "m"}, "harnesses": ["lookup-plain"]}
    assert AgentTrainConfig.model_validate({**base, "report_to": "tensorboard"}).report_to == ["tensorboard"]
    assert AgentTrainConfig.model_validate({**base, "report_to": "all"}).report_to == ["tensorboard", "wandb", "trackio", "mlflow"]
    assert AgentTrainConfig.model_validate({**base, "report_to": ["none"]}).report_to == []
    assert AgentTrainConfig.model_validate({**base, "tensorboard": True}).report_to == ["tensorboard"]
    with pytest.raises(ValueError, match="report_to"):
        AgentTrainConfig.model_validate({**base, "report_to": ["comet"]})


def test_every_lm_recipe_passes_report_to_to_its_rl_runs(tmp_path):
    from harnessrl.recipes import agentic_coding, harness_teacher, multi_harness

    ht = harness_teacher.HarnessTeacherConfig(report_to=["tensorboard"])
    tcfg = harness_teacher.agent_train_config(ht, tmp_path, ("m", None), "lookup-plain", 2, "agent", [])
    assert tcfg.report_to == ["tensorboard"]
    mh = multi_harness.MultiHarnessConfig(report_to=["tensorboard"])
    assert multi_harness.rl_config(mh, tmp_path, "m", "within", 0, []).report_to == ["tensorboard"]
    ac = agentic_coding.AgenticCodingConfig(report_to="tensorboard")
    assert agentic_coding.rl_config(ac, tmp_path, "m", [type("T", (), {"id": "code-v1/x"})()]).report_to == ["tensorboard"]


def test_trl_engine_passes_report_to_to_grpo_config():
    from harnessrl.engines.trl_config import TRLRunConfig, translate

    cfg = TRLRunConfig.model_validate({"policy": {"model": "m"}, "harnesses": ["lookup-plain", "lookup-kv"],
                                       "report_to": ["tensorboard"]})
    assert translate(cfg).args["report_to"] == ["tensorboard"]
    args = translate(cfg.model_copy(update={"report_to": ["trackio"]})).args
    assert args["report_to"] == ["trackio"] and args["trackio_static_space_id"] is False and args["trackio_space_id"] is None


@pytest.mark.slow
def test_trl_engine_run_writes_tensorboard_and_trackio_offline(model_dir, tmp_path, monkeypatch):
    """TRL's own callbacks log the GRPOTrainer run: TensorBoard under run_dir/runs, trackio locally (no Space)."""
    import uuid

    from trackio.sqlite_storage import SQLiteStorage

    monkeypatch.setenv("TRACKIO_DIR", str(tmp_path / "trackio"))
    run_id = f"trl-{uuid.uuid4().hex[:8]}"
    run = tmp_path / run_id  # TRL names its trackio run after the output folder
    res = CliRunner().invoke(app, [
        "train", "agent", "--engine", "trl", "--model", str(model_dir), "--out", str(run),
        "--set", "report_to=[tensorboard,trackio]", "--set", "harnesses=[lookup-plain,lookup-kv]",
        "--set", "tasks=[lookup/000]", "--set", "group_size=2", "--set", "tasks_per_update=1", "--set", "updates=2",
        "--set", "policy.max_new_tokens=6", "--set", "trl.gradient_checkpointing=false"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    events = list(run.glob("runs/*/events.out.tfevents.*"))
    assert events, sorted(str(p.relative_to(run)) for p in run.rglob("*"))[:40]
    assert _scalars(events[0].parent, "train/loss") and len(_scalars(events[0].parent, "train/loss")) == 2
    runs = SQLiteStorage.get_runs("harnessrl")
    assert runs, "no trackio run in the harnessrl project"
    logged = [row for name in runs for row in SQLiteStorage.get_logs("harnessrl", name) if "train/loss" in row]
    assert len(logged) >= 2
