"""Parity: one frozen batch through a TRL GRPOTrainer step (via the engine) and through the native
trainer gives the same advantages, loss and gradients — Within and Cross, GRPO and GSPO.

The batch is real: the tiny model's episodes through two toy harnesses (native `_collect`). The
TRL side replays those episodes from its rollout_func in the slots TRL's sampler asked for, then
runs the trainer's own `_generate_and_score_completions` and `compute_loss` (what `train()` calls).
"""

from __future__ import annotations

import copy

import pytest
import torch

from harnessrl.engines.trl import TRLEngine
from harnessrl.engines.trl_config import TRLRunConfig
from harnessrl.policies.lm import LMConfig
from harnessrl.rl.advantages import group_advantages
from harnessrl.train.agent import AgentTrainConfig, AgentTrainer
from tests import tiny_lm
from tests.train import toy

HARNESSES = ["toy-a", "toy-b"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_lm.build(tmp_path_factory.mktemp("trl-parity"))


def harnesses():
    return [toy.harness(h, prompt=f"You are {h}.") for h in HARNESSES]


def replay(episodes, grouping):
    """A rollout source that hands TRL's slots the frozen episodes (member k of a cross group -> harness k mod H)."""
    by: dict[tuple[str, str], list] = {}
    for i, e in enumerate(episodes):
        by.setdefault((e.context.task_id, e.context.harness_id), []).append(i)
    served: list[int] = []

    def collect(slots, trainer, step):
        out = []
        for s in slots:
            n = s.member if grouping == "within" else s.member // len(HARNESSES)
            i = by[(s.task_id, s.harness_id)][n]
            served.append(i)
            out.append(copy.deepcopy(episodes[i]))
        return out

    return collect, served


@pytest.mark.parametrize("objective", ["grpo", "gspo"])
@pytest.mark.parametrize("grouping", ["within", "cross"])
def test_trl_step_matches_native_trainer(model_dir, tmp_path, grouping, objective):
    common = dict(harnesses=HARNESSES, group_size=3, tasks_per_update=3, updates=1, grouping=grouping,
                  objective=objective, lr=1e-2, max_grad_norm=1e9, adv_eps=1e-4)
    policy = LMConfig(model=str(model_dir), max_new_tokens=8)
    native = AgentTrainer(AgentTrainConfig(policy=policy, run_dir=str(tmp_path / "native"), log_kl=False, **common),
                          tasks=toy.tasks(), harnesses=harnesses(), open_env=toy.open_env)
    episodes = native._collect(0)
    rewards = torch.tensor([e.reward for e in episodes])
    assert 0 < rewards.mean() < 1, "the toy task must give signal"
    contexts = [(e.context.task_id, e.context.harness_id) for e in episodes]
    want_adv = group_advantages(rewards, contexts, rule=grouping, estimator="grpo", scale="group", eps=1e-4).advantages

    # TRL: the same episodes, through the engine's rollout_func, advantages and loss
    collect, served = replay(episodes, grouping)
    engine = TRLEngine(TRLRunConfig(policy=policy, run_dir=str(tmp_path / "trl"), trl={"gradient_checkpointing": False},
                                    **common), tasks=toy.tasks(), harnesses=harnesses(), open_env=toy.open_env,
                       collect=collect)
    trainer = engine.trainer
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = trainer.args.gradient_accumulation_steps  # set by train()
    batch = next(iter(trainer.get_train_dataloader()))
    scored = trainer._generate_and_score_completions(batch)
    assert sorted(served) == list(range(len(episodes))), "every frozen episode is served exactly once"
    torch.testing.assert_close(scored["advantages"].float(), want_adv[served].float(), atol=1e-5, rtol=0)
    trl_loss = trainer.compute_loss(trainer.model, scored)
    trl_loss.backward()

    # native: one step on exactly this batch (ratio 1, so the loss is the objective at the starting weights)
    native.frozen = episodes
    native.cfg.offline_correction = "none"
    row = native.step(0)
    assert abs(float(trl_loss.detach()) - row["loss"]) <= 1e-5, (float(trl_loss.detach()), row["loss"])
    trl_grads = {n: p.grad for n, p in trainer.model.named_parameters() if p.grad is not None}
    native_grads = {n: p.grad for n, p in native.policy.model.named_parameters() if p.grad is not None}
    assert trl_grads.keys() == native_grads.keys() and trl_grads
    # (with equal group sizes a sequence-mean loss is 0 at ratio 1; its gradient is not, and is compared here)
    assert sum(float(g.abs().sum()) for g in native_grads.values()) > 1e-3, "a zero gradient would make this vacuous"
    for name, g in native_grads.items():
        torch.testing.assert_close(trl_grads[name], g, atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("grouping, objective, lora_rank", [("within", "grpo", 0), ("cross", "gspo", 0), ("cross", "grpo", 4)])
def test_kl_term_matches_away_from_the_reference(model_dir, tmp_path, grouping, objective, lora_rank):
    """beta > 0 (k3 to the starting weights): one native update first moves the policy off its
    reference, the TRL model gets those weights, and the KL-regularised loss and gradients agree.
    With LoRA the reference is the adapter disabled on both sides, and only the adapter trains.
    (This caught TRL 1.16's default use_bias_correction_kl=True: the same loss value, a different
    KL gradient; the engine turns it off to keep the native k3 term.)"""
    common = dict(harnesses=HARNESSES, group_size=3, tasks_per_update=3, updates=2, grouping=grouping,
                  objective=objective, lr=3e-2, max_grad_norm=1e9, adv_eps=1e-4, kl_coef=0.5)
    policy = LMConfig(model=str(model_dir), max_new_tokens=8, lora_rank=lora_rank)
    native = AgentTrainer(AgentTrainConfig(policy=policy, run_dir=str(tmp_path / "native"), **common),
                          tasks=toy.tasks(), harnesses=harnesses(), open_env=toy.open_env)
    native.step(0)  # online update 0: the weights leave the reference
    episodes = native._collect(1)
    collect, served = replay(episodes, grouping)
    engine = TRLEngine(TRLRunConfig(policy=policy, run_dir=str(tmp_path / "trl"), trl={"gradient_checkpointing": False},
                                    **common), tasks=toy.tasks(), harnesses=harnesses(), open_env=toy.open_env,
                       collect=collect)
    trainer = engine.trainer
    trainer.model.load_state_dict(native.policy.model.state_dict())
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = trainer.args.gradient_accumulation_steps
    scored = trainer._generate_and_score_completions(next(iter(trainer.get_train_dataloader())))
    trl_loss = trainer.compute_loss(trainer.model, scored)
    trl_loss.backward()
    kl = trainer._metrics["train"]["kl"][-1]
    native.frozen = episodes
    native.cfg.offline_correction = "none"
    native.policy.model.zero_grad(set_to_none=True)
    row = native.step(1)
    assert row["kl"] > 1e-4 and abs(kl - row["kl"]) <= 1e-5, (kl, row["kl"])  # the KL term is really there
    assert abs(float(trl_loss.detach()) - row["loss"]) <= 1e-5, (float(trl_loss.detach()), row["loss"])
    trl_grads = {n: p.grad for n, p in trainer.model.named_parameters() if p.grad is not None}
    native_trained = {n for n, p in native.policy.model.named_parameters() if p.grad is not None}
    assert native_trained == set(trl_grads) and all(("lora_" in n) == bool(lora_rank) for n in native_trained)
    for name, p in native.policy.model.named_parameters():
        if p.grad is not None:
            torch.testing.assert_close(trl_grads[name], p.grad, atol=1e-5, rtol=1e-4, msg=lambda m, n=name: f"{n}: {m}")
