"""PPO on multi-context envs: it learns, it is deterministic, truncation bootstraps, resume after kill -9 is bit-identical."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from harnessrl.envs.multicontext import ContextSpec, MultiContextVectorEnv, cartpole_contexts
from harnessrl.train import ppo as ppo_module
from harnessrl.train.checkpoint import load_checkpoint
from harnessrl.train.ppo import PPOConfig, train_ppo
from tests.train import ppo_child

ROOT = Path(__file__).resolve().parents[2]


def _cartpole(n=4):
    return MultiContextVectorEnv([ContextSpec("standard", "CartPole-v1")], envs_per_context=n)


def test_ppo_learns_cartpole():
    res = train_ppo(PPOConfig(total_steps=32_768, seed=1), _cartpole())
    early = np.nanmean([h["return"] for h in res.history[:3]])
    late = np.nanmean([h["return"] for h in res.history[-5:]])
    assert early < 40 and late > 100, (early, late)  # random play is ~22 (seeds 0-4 reach 120-165 here)
    assert res.global_step == 32_768 and len(res.history) == 64


def test_same_seed_same_bits_and_different_seed_differs():
    cfg = PPOConfig(total_steps=2048, num_steps=64, critic="multihead", seed=3)
    env = lambda: MultiContextVectorEnv(cartpole_contexts(["standard", "double-reward"]), envs_per_context=2)  # noqa: E731
    a, b = train_ppo(cfg, env()), train_ppo(cfg, env())
    for (k, x), y in zip(a.agent.state_dict().items(), b.agent.state_dict().values()):
        assert torch.equal(x, y), k
    assert a.history == b.history and a.episodes == b.episodes
    c = train_ppo(cfg.model_copy(update={"seed": 4}), env())
    assert not torch.equal(a.agent.actor_head.weight, c.agent.actor_head.weight)


def test_truncation_bootstraps_from_the_final_observation(monkeypatch):
    seen = {}
    real = ppo_module.gae

    def spy(rewards, values, mask=None, **kw):
        seen.setdefault("calls", []).append({k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in kw.items()})
        return real(rewards, values, mask, **kw)

    monkeypatch.setattr(ppo_module, "gae", spy)
    env = MultiContextVectorEnv([ContextSpec("short", "CartPole-v1", make_kwargs={"max_episode_steps": 8})], envs_per_context=2)
    res = train_ppo(PPOConfig(total_steps=256, num_steps=32, seed=0), env)
    call = seen["calls"][0]
    trunc, fv = call["truncated"], call["final_values"]
    assert trunc.any(), "the short time limit must truncate"
    assert torch.all(fv[trunc] != 0) and torch.all(fv[~trunc] == 0)  # V(final obs) exactly where truncated
    assert res.global_step == 256
    seen.clear()
    train_ppo(PPOConfig(total_steps=256, num_steps=32, seed=0, bootstrap_truncation=False),
              MultiContextVectorEnv([ContextSpec("short", "CartPole-v1", make_kwargs={"max_episode_steps": 8})], 2))
    call = seen["calls"][0]
    assert not call["truncated"].any() and call["terminated"].sum() >= trunc.sum()  # cleanrl: truncation ends like termination


def test_continuous_actions_are_clipped_for_the_env_and_learn_nothing_broken():
    env = MultiContextVectorEnv([ContextSpec("slow", "Pendulum-v1"), ContextSpec("fast", "Pendulum-v1", physics={"g": 12.0})],
                                envs_per_context=1)
    res = train_ppo(PPOConfig(total_steps=512, num_steps=64, critic="conditioned", obs_norm="context",
                              reward_norm="context"), env)
    assert not res.agent.discrete and res.agent.log_std is not None
    act = res.policy_fn(seed=0)
    a = act(np.zeros((2, 3), np.float32), np.array([0, 1]))
    assert a.shape == (2, 1) and np.all(np.abs(a) <= 2.0)
    v = res.value_fn()(np.zeros((2, 3), np.float32), np.array([0, 1]))
    assert v.shape == (2,) and np.isfinite(v).all()


def test_bad_input_fails_before_training():
    env = _cartpole(2)
    with pytest.raises(ValueError, match=r"num_contexts=3 but the env has 1 contexts \(standard\)"):
        train_ppo(PPOConfig(total_steps=128, num_contexts=3), env)
    with pytest.raises(TypeError, match="multi-context vector env"):
        train_ppo(PPOConfig(total_steps=128), object())
    with pytest.raises(ValueError, match="num_minibatches"):
        PPOConfig(num_steps=2, num_minibatches=4)


def test_resume_refuses_a_different_config_or_env(tmp_path):
    ppo_child.run(tmp_path)
    with pytest.raises(ValueError, match="seed differ"):
        train_ppo(PPOConfig(**{**ppo_child.CONFIG, "seed": 8}), ppo_child.make_env(), run_dir=tmp_path, resume=True)
    other = MultiContextVectorEnv(cartpole_contexts(["standard", "double-reward"]), envs_per_context=2)
    with pytest.raises(ValueError, match="trained on contexts"):
        train_ppo(PPOConfig(**ppo_child.CONFIG), other, run_dir=tmp_path, resume=True)


@pytest.mark.slow
def test_resume_after_kill_is_bit_identical(tmp_path):
    reference = ppo_child.run(tmp_path / "reference")
    run_dir = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "tests.train.ppo_child", str(run_dir), "slow"], cwd=ROOT, env=env)
    deadline = time.time() + 120
    try:
        while time.time() < deadline:
            state = load_checkpoint(run_dir) if (run_dir / "checkpoint.pt").exists() else None
            if state is not None and state["update"] >= 3:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the child never wrote a checkpoint")
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    killed_at = load_checkpoint(run_dir)["update"]
    assert 3 <= killed_at < 12, f"killed after update {killed_at}: the kill must land mid-run"
    subprocess.run([sys.executable, "-m", "tests.train.ppo_child", str(run_dir), "resume"], cwd=ROOT, env=env, check=True,
                   timeout=300)
    final = load_checkpoint(run_dir)
    assert final["update"] == 12
    for k, v in reference.agent.state_dict().items():
        assert torch.equal(final["agent"][k], v), k
    assert final["history"] == reference.history
    assert final["episodes"] == reference.episodes



def test_image_rollouts_are_evaluated_in_chunks_with_the_same_result(monkeypatch):
    """_advantages runs an image trunk over a rollout in IMAGE_CHUNK rows at a time (memory); the
    log-probs, values and advantages must equal one full-batch pass, for both image networks."""
    from harnessrl.train.ppo import _advantages, _Buffers
    from harnessrl.train.ppo_agent import ActorCritic

    obs_space = gym.spaces.Box(0, 255, (3, 36, 36), np.uint8)
    T, N = 24, 8  # 192 rows: 4 chunks of 50 rows (the last one short)
    rng = np.random.default_rng(0)
    for network in ("nature-small", "impala"):
        torch.manual_seed(0)
        agent = ActorCritic(obs_space, gym.spaces.Discrete(5), 2, critic="conditioned", network=network)
        cfg = PPOConfig(network=network, num_steps=T, gamma=0.999)
        buf = _Buffers.allocate(T, N, obs_space, gym.spaces.Discrete(5), True, np.uint8)
        buf.obs[:] = rng.integers(0, 256, buf.obs.shape, dtype=np.uint8)
        buf.act[:] = rng.integers(0, 5, buf.act.shape)
        buf.rew[:] = rng.normal(size=buf.rew.shape)
        buf.term[:] = rng.random(buf.term.shape) < 0.05
        nxt, ctx = rng.integers(0, 256, (N, 3, 36, 36), dtype=np.uint8), torch.arange(N) % 2
        monkeypatch.setattr(ppo_module, "IMAGE_CHUNK", 50)
        chunked = _advantages(cfg, agent, buf, nxt, ctx, torch.device("cpu"))
        monkeypatch.setattr(ppo_module, "IMAGE_CHUNK", T * N)
        whole = _advantages(cfg, agent, buf, nxt, ctx, torch.device("cpu"))
        for name in ("logprobs", "values", "adv", "ret"):
            torch.testing.assert_close(getattr(chunked, name), getattr(whole, name), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="at least 36x36"):
        ActorCritic(gym.spaces.Box(0, 255, (3, 16, 16), np.uint8), gym.spaces.Discrete(5), 1, network="nature-small")
