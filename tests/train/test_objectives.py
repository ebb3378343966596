"""Registering a new objective takes one file (tests/train/toy_objective.py): the run config accepts
it by name, `policy_loss` computes it, and the native trainer takes an update with its declared
advantage estimator, clip and aggregation."""

from __future__ import annotations

import pytest
import torch

from harnessrl.config import ConfigError, load_config
from harnessrl.engines.trl_config import TRLRunConfig, translate
from harnessrl.policies.lm import LMConfig
from harnessrl.rl.losses import policy_loss
from harnessrl.rl.objectives import OBJECTIVES
from harnessrl.train.agent import AgentTrainConfig, AgentTrainer
from tests import tiny_lm
from tests.train import toy
from tests.train.toy_objective import NAME


def test_every_built_in_objective_is_declared_once():
    assert set(OBJECTIVES.names()) >= {"ppo", "grpo", "rloo", "gspo", "gspo_token"}
    assert OBJECTIVES.get("gspo").clip == (3e-4, 4e-4) and OBJECTIVES.get("rloo").advantage == "rloo"
    assert [n for n in OBJECTIVES.names() if OBJECTIVES.get(n).critic] == ["ppo"]


def test_a_registered_objective_is_a_config_name_and_a_loss():
    cfg = load_config(AgentTrainConfig, base={"policy": {"model": "m"}, "harnesses": ["a"]}, overrides=[f"objective={NAME}"])
    assert cfg.objective == NAME
    with pytest.raises(ConfigError, match="unknown objective 'toy_pgg'.*toy_pg"):
        load_config(AgentTrainConfig, base={"policy": {"model": "m"}, "harnesses": ["a"]}, overrides=["objective=toy_pgg"])
    lp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    out = policy_loss(NAME, lp, lp.detach() - 0.1, torch.tensor([2.0]), torch.ones(1, 2))
    assert out.loss.item() == pytest.approx(-2.0 * torch.exp(torch.tensor(0.1)).item())
    with pytest.raises(ConfigError, match="objective: 'toy_pg' has no GRPOTrainer equivalent; use grpo, gspo"):
        translate(TRLRunConfig(policy={"model": "m"}, harnesses=["a"], objective=NAME))


def test_the_trainer_takes_an_update_with_the_registered_objective(tmp_path):
    model_dir = tiny_lm.build(tmp_path / "model")
    cfg = AgentTrainConfig(policy=LMConfig(model=str(model_dir), max_new_tokens=8), run_dir=str(tmp_path / "run"),
                           harnesses=["toy-a"], objective=NAME, group_size=4, tasks_per_update=2, updates=1, lr=1e-2,
                           grouping="within")
    tr = AgentTrainer(cfg, tasks=toy.tasks(), harnesses=[toy.harness("toy-a", prompt="You are toy-a.")], open_env=toy.open_env)
    assert tr.clip == (0.1, 0.1) and tr.agg == "seq-mean-token-sum" and tr.critic is None
    before = [p.detach().clone() for p in tr.policy.trainable_parameters()]
    (row,) = tr.run()
    assert row["update"] == 1 and row["grad_norm"] > 0 and row["ratio_mean"] == pytest.approx(1.0, abs=1e-4)
    assert any(not torch.equal(a, b) for a, b in zip(before, tr.policy.trainable_parameters()))
