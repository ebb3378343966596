"""The optional context families build real envs: MuJoCo, BipedalWalker (box2d), Procgen (envpool)."""

from __future__ import annotations

import numpy as np
import pytest

from harnessrl.envs.levels import TEST_LEVEL_OFFSET, bipedal_contexts, mujoco_contexts
from harnessrl.envs.multicontext import EnvConfigError, MultiContextVectorEnv


def test_mujoco_contexts_weigh_forward_progress_differently(tmp_path, monkeypatch):
    pytest.importorskip("mujoco", reason="MuJoCo is the optional extra harnessrl[mujoco]")
    monkeypatch.chdir(tmp_path)  # MuJoCo writes MUJOCO_LOG.TXT into the working directory
    env = MultiContextVectorEnv(mujoco_contexts("HalfCheetah-v5", (1.0, 4.0)), envs_per_context=1)
    env.reset(seed=0)
    assert env.envs[1].unwrapped._forward_reward_weight == 4.0
    obs, r, *_ = env.step(np.zeros((2, 6), np.float32))
    assert obs.shape == (2, 17) and np.isfinite(r).all()


def test_bipedal_contexts_scale_rewards():
    pytest.importorskip("Box2D", reason="Box2D is the optional extra harnessrl[box2d]")
    import gymnasium as gym

    env = MultiContextVectorEnv(bipedal_contexts(reward_scales=(1.0, 3.0)), envs_per_context=1)
    env.reset(seed=0)
    _, r, *_ = env.step(np.zeros((2, 4), np.float32))
    single = gym.make("BipedalWalker-v3")
    single.reset(seed=1)  # sub-env 1 is seeded with seed + 1
    raw = single.step(np.zeros(4, np.float32))[1]
    assert r[1] == pytest.approx(3 * raw)


def test_procgen_contexts_play_disjoint_level_ranges():
    pytest.importorskip("envpool", reason="Procgen needs the optional extra harnessrl[procgen] (envpool)")
    from harnessrl.envs.procgen import ProcgenContextVectorEnv, task_id

    assert task_id("coinrun") == "CoinrunEasy-v0"
    with pytest.raises(EnvConfigError, match="unknown Procgen game"):
        task_id("pong")
    env = ProcgenContextVectorEnv("maze", num_contexts=2, envs_per_context=2, num_levels=6, seed=0)
    obs, _ = env.reset()
    assert obs.shape == (4, 3, 64, 64) and env.context.tolist() == [0, 0, 1, 1]
    rng = np.random.default_rng(0)
    finals = 0
    for _ in range(600):
        obs, r, term, trunc, info = env.step(rng.integers(0, 15, 4))
        if info:
            finals += int(info["_final_obs"].sum())
            assert not np.array_equal(info["final_obs"][info["_final_obs"]], obs[info["_final_obs"]])
    episodes = env.pop_episodes()
    assert finals == len(episodes) > 0
    for _, ctx, level, _, _ in episodes:
        assert level in (range(0, 3) if ctx == 0 else range(3, 6))
    test = ProcgenContextVectorEnv("maze", num_contexts=1, envs_per_context=2, num_levels=10, test=True)
    assert test.context_names == [f"levels{TEST_LEVEL_OFFSET}-{TEST_LEVEL_OFFSET + 9}"]
    env.close()
    test.close()
