"""`report_to` (TRL's name) in every training config and recipe, not only the LM trainer: PPO (the conditioned-critic
recipe's trainer), the skill optimizer (the BiPA recipe's), and the reward-tilt recipe's fine-tuning runs, each
writing real TensorBoard and trackio logs offline."""

from __future__ import annotations

import uuid

import pytest

from harnessrl.config import ConfigError

TRACKERS = ["tensorboard", "wandb", "trackio", "mlflow"]


def _configs():
    from harnessrl.engines.trl_config import TRLRunConfig
    from harnessrl.recipes.agentic_coding import AgenticCodingConfig
    from harnessrl.recipes.bipa import BipaRecipeConfig
    from harnessrl.recipes.conditioned_critic import ConditionedCriticConfig
    from harnessrl.recipes.harness_teacher_config import HarnessTeacherConfig
    from harnessrl.recipes.multi_harness import MultiHarnessConfig
    from harnessrl.recipes.reward_tilt import RewardTiltConfig
    from harnessrl.train.agent import AgentTrainConfig
    from harnessrl.train.ppo import PPOConfig
    from harnessrl.train.skill_optimizer import SkillOptimizerConfig

    need = {AgentTrainConfig: {"policy": {"model": "m"}, "harnesses": ["lookup-plain"]},
            TRLRunConfig: {"policy": {"model": "m"}, "harnesses": ["lookup-plain"]}}
    return [(cls, need.get(cls, {})) for cls in (
        AgentTrainConfig, TRLRunConfig, PPOConfig, SkillOptimizerConfig, HarnessTeacherConfig, MultiHarnessConfig,
        AgenticCodingConfig, ConditionedCriticConfig, RewardTiltConfig, BipaRecipeConfig)]


@pytest.mark.parametrize("cls,base", _configs(), ids=lambda c: getattr(c, "__name__", ""))
def test_every_training_config_and_recipe_takes_report_to_as_trl_does(cls, base):
    assert cls().report_to == [] if not base else cls.model_validate(base).report_to == []
    assert cls.model_validate({**base, "report_to": "all"}).report_to == TRACKERS
    assert cls.model_validate({**base, "report_to": "none"}).report_to == []
    assert cls.model_validate({**base, "report_to": ["tensorboard", "trackio"]}).report_to == ["tensorboard", "trackio"]
    with pytest.raises(ValueError, match="report_to"):
        cls.model_validate({**base, "report_to": ["comet"]})


@pytest.fixture
def trackio_store(tmp_path, monkeypatch):
    """trackio's local store (read once per process, when trackio is first imported); logs are looked up by run name."""
    monkeypatch.setenv("TRACKIO_DIR", str(tmp_path / "trackio-home"))

    def logs(run: str) -> list[dict]:
        from trackio.sqlite_storage import SQLiteStorage

        return SQLiteStorage.get_logs("harnessrl", run)

    return logs


def _tensorboard(event_dir, tag: str) -> list[tuple[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(event_dir))
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def test_conditioned_critic_ppo_runs_log_to_tensorboard_and_trackio(tmp_path, trackio_store):
    from harnessrl.config import load_config
    from harnessrl.recipes import conditioned_critic as cc

    cfg = load_config(cc.ConditionedCriticConfig, None, [
        "families=[bandit]", "seeds=[0]", "critics=[shared]", "workers=1", "bandit.total_steps=1024",
        "value_error_steps=8", "eval_episodes=1", "report_to=[tensorboard,trackio]"])
    [result] = cc.run_recipe(cfg, tmp_path / "cc")
    run = tmp_path / "cc" / "runs" / "bandit" / "bandit" / "shared" / "seed0"
    returns = [row["return"] for row in result["history"]]
    assert len(returns) >= 2
    assert [round(v, 4) for _, v in _tensorboard(run / "tensorboard", "return")] == [round(r, 4) for r in returns]
    logged = trackio_store("seed0")
    assert [row["step"] for row in logged[-len(returns):]] == list(range(1, len(returns) + 1))
    assert [round(row["return"], 4) for row in logged[-len(returns):]] == [round(r, 4) for r in returns]


def test_ppo_with_report_to_needs_a_run_folder():
    from harnessrl.envs.multicontext import ContextSpec, MultiContextVectorEnv
    from harnessrl.train.ppo import PPOConfig, train_ppo

    env = MultiContextVectorEnv([ContextSpec("standard", "CartPole-v1")], envs_per_context=1)
    with pytest.raises(ConfigError, match="run_dir"):
        train_ppo(PPOConfig(total_steps=128, num_steps=32, report_to=["tensorboard"]), env)


def test_skill_optimizer_logs_each_iteration_to_tensorboard_and_trackio(tmp_path, trackio_store):
    from harnessrl.envs.lookup import lookup_tasks
    from harnessrl.evaluate.skill_runs import read_log
    from harnessrl.harness.base import load_spec
    from harnessrl.harness.skills import Skill, SkillSection
    from harnessrl.policies.skill_probes import SkillBlindPolicy
    from harnessrl.records import RecordStore
    from harnessrl.train.skill_optimizer import SkillOptimizer, SkillOptimizerConfig

    tasks = lookup_tasks(n=12)
    skill = Skill("look", (SkillSection("look-first", "Look first", "Always `look` first."),))
    cfg = SkillOptimizerConfig(iterations=3, seed=1, run_id=f"skillopt-tracked-{uuid.uuid4().hex}", report_to=["tensorboard", "trackio"])
    opt = SkillOptimizer(cfg, policy=SkillBlindPolicy(0.5), harness=load_spec("lookup-plain"), seed_skill=skill,
                         train_tasks=tasks[:6], test_tasks=tasks[6:], run_dir=tmp_path / "run", store=RecordStore(tmp_path / "st"))
    res = opt.run()
    decisions = read_log(tmp_path / "run").decisions
    accepted = [float(d["accepted"]) for d in decisions]
    assert [(s, v) for s, v in _tensorboard(tmp_path / "run" / "tensorboard", "accepted")] == list(zip([1, 2, 3], accepted))
    logged = trackio_store(cfg.run_id)  # unique: trackio's store may outlive this test (it is fixed at first import)
    assert [row["accepted"] for row in logged] == accepted and logged[-1]["episodes"] == res.episodes


def test_mlflow_logs_to_a_local_mlruns_folder(tmp_path, monkeypatch):
    from harnessrl.train.metrics import Trackers

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    with Trackers(tmp_path / "run", ["mlflow"], "ml-run", {"lr": 0.1}) as trackers:
        for step, value in ((1, 0.25), (2, 0.5)):
            trackers.log({"reward_mean": value, "note": "text is not a metric"}, step)
    import mlflow

    client = mlflow.tracking.MlflowClient((tmp_path / "run" / "mlruns").absolute().as_uri())
    [run] = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    history = client.get_metric_history(run.info.run_id, "reward_mean")
    assert [(m.step, m.value) for m in history] == [(1, 0.25), (2, 0.5)] and run.data.params["lr"] == "0.1"
