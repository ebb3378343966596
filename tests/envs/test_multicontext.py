"""Multi-context vector env: contexts, same-step autoreset, final obs, levels, clear errors, state round trip."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

from harnessrl.envs.bandit import BANDIT_ID, ContextualBandit, bandit_contexts
from harnessrl.envs.levels import TEST_LEVEL_OFFSET, level_split, minigrid_contexts, minigrid_test_context, partition
from harnessrl.envs.multicontext import (
    CARTPOLE_VARIANTS, ContextSpec, EnvConfigError, MultiContextVectorEnv, cartpole_contexts, make_env,
)


def test_contexts_rewards_and_physics_differ_per_context():
    env = MultiContextVectorEnv(cartpole_contexts(["standard", "heavy-4x-reward"]), envs_per_context=2)
    assert env.num_envs == 4 and env.context.tolist() == [0, 0, 1, 1]
    assert env.envs[2].unwrapped.gravity == 12.0 and env.envs[0].unwrapped.gravity == 9.8
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 4)
    _, rewards, *_ = env.step(np.zeros(4, dtype=np.int64))
    assert rewards.tolist() == [1.0, 1.0, 4.0, 4.0]
    long_pole = make_env(cartpole_contexts(["long-pole-half-reward"])[0]).unwrapped
    assert long_pole.length == 0.75 and long_pole.polemass_length == pytest.approx(0.075)


def test_same_step_autoreset_final_obs_and_episode_records():
    env = MultiContextVectorEnv(cartpole_contexts(["standard", "double-reward"]), envs_per_context=1)
    env.reset(seed=3)
    ref = [gym.make("CartPole-v1") for _ in range(2)]
    for i, e in enumerate(ref):
        e.reset(seed=3 + i)
    lengths = [0, 0]
    for _ in range(60):  # always push left: episodes end by termination
        obs, rew, term, trunc, info = env.step(np.zeros(2, dtype=np.int64))
        for i, e in enumerate(ref):
            o, r, te, tr, _ = e.step(0)
            lengths[i] += 1
            if te or tr:
                assert term[i] and info["_final_obs"][i]
                np.testing.assert_array_equal(info["final_obs"][i], o)  # the true last observation
                o, _ = e.reset()
            np.testing.assert_array_equal(obs[i], o)  # already the next episode's first obs
    episodes = env.pop_episodes()
    assert episodes and env.pop_episodes() == []
    for i, ctx, level, ret, length in episodes:
        assert ctx == i and level == -1 and ret == pytest.approx(length * (1.0 if ctx == 0 else 2.0))


def test_truncation_is_reported_with_final_obs():
    env = MultiContextVectorEnv([ContextSpec("short", "CartPole-v1", make_kwargs={"max_episode_steps": 5})])
    env.reset(seed=0)
    for t in range(5):
        obs, _, term, trunc, info = env.step(np.array([t % 2]))
    assert trunc[0] and not term[0] and info["_final_obs"][0]
    assert not np.array_equal(info["final_obs"][0], obs[0])


def test_levels_are_disjoint_partitioned_and_recorded():
    train, test = level_split(12, 5)
    assert set(train).isdisjoint(test) and min(test) >= TEST_LEVEL_OFFSET
    parts = partition(train, 3)
    assert [len(p) for p in parts] == [4, 4, 4] and sorted(sum(parts, ())) == list(train)
    specs = minigrid_contexts("MiniGrid-Empty-Random-5x5-v0", num_contexts=2, num_train_levels=4)
    env = MultiContextVectorEnv(specs, envs_per_context=2)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (4, 151) and obs.dtype == np.float32
    seen = {0: set(), 1: set()}
    for _ in range(300):
        env.step(np.full(4, 2))  # forward
        for i, ctx, level, _, _ in env.pop_episodes():
            seen[ctx].add(level)
    assert seen[0] and seen[1]
    assert seen[0] <= set(specs[0].levels) and seen[1] <= set(specs[1].levels)
    test = minigrid_test_context("MiniGrid-Empty-Random-5x5-v0", num_test_levels=3)
    assert set(test.levels).isdisjoint(train)


def test_same_level_gives_same_layout():
    spec = minigrid_contexts("MiniGrid-DoorKey-5x5-v0", num_contexts=1, num_train_levels=1)[0]
    a, b = make_env(spec), make_env(spec)
    np.testing.assert_array_equal(a.reset(seed=0)[0], b.reset(seed=0)[0])
    firsts = {a.reset(seed=level)[0].tobytes() for level in range(20)}
    assert len(firsts) > 5  # different levels, different layouts


def test_bandit_contexts_share_observation_and_differ_in_value():
    specs = bandit_contexts(offsets=(0.0, 5.0), arm_means=(0.0, 1.0), noise=0.0)
    env = MultiContextVectorEnv(specs, envs_per_context=1)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs[0], obs[1])
    _, rew, term, _, _ = env.step(np.array([1, 1]))
    assert rew.tolist() == [1.0, 6.0] and term.all()
    assert ContextualBandit(offset=5.0).expected_value([0.5, 0.5]) == 5.5
    with pytest.raises(ValueError, match="2 arms"):
        ContextualBandit(arm_means=(1.0,))
    assert gym.spec(BANDIT_ID) is not None


def test_bad_input_is_named():
    with pytest.raises(EnvConfigError, match="context 'x'.*NoSuchEnv-v0"):
        MultiContextVectorEnv([ContextSpec("x", "NoSuchEnv-v0")])
    with pytest.raises(EnvConfigError, match="physics attribute 'gravty'"):
        MultiContextVectorEnv([ContextSpec("x", "CartPole-v1", physics={"gravty": 3.0})])
    with pytest.raises(EnvConfigError, match="spaces"):
        MultiContextVectorEnv([ContextSpec("a", "CartPole-v1"), ContextSpec("b", "Acrobot-v1")])
    with pytest.raises(EnvConfigError, match="unique"):
        MultiContextVectorEnv([ContextSpec("a", "CartPole-v1"), ContextSpec("a", "CartPole-v1")])
    with pytest.raises(EnvConfigError, match="unknown CartPole variant"):
        cartpole_contexts(["wobbly"])
    with pytest.raises(EnvConfigError, match="context 'nan'.*non-finite reward"):
        MultiContextVectorEnv([ContextSpec("nan", "CartPole-v1", reward_scale=float("nan"))])


class NaNAfter(gym.Wrapper):
    def __init__(self, env, after=3):
        super().__init__(env)
        self.t, self.after = 0, after

    def step(self, action):
        obs, r, te, tr, info = self.env.step(action)
        self.t += 1
        return (obs * np.nan if self.t > self.after else obs), r, te, tr, info


def test_nan_observation_mid_run_names_env_and_context():
    from harnessrl.envs.multicontext import WRAPPERS
    WRAPPERS["test_nan_after_3"] = NaNAfter
    spec = ContextSpec("broken", "CartPole-v1", wrappers=("test_nan_after_3",))
    env = MultiContextVectorEnv([ContextSpec("ok", "CartPole-v1"), spec], preflight_steps=0)
    env.reset(seed=0)
    with pytest.raises(EnvConfigError, match=r"CartPole-v1.*context 'broken', sub-env 1.*non-finite observation"):
        for t in range(10):
            env.step(np.array([t % 2, t % 2]))
    with pytest.raises(EnvConfigError, match="pre-flight"):
        MultiContextVectorEnv([spec], preflight_steps=6)


def test_state_round_trip_continues_identically():
    env = MultiContextVectorEnv(cartpole_contexts(), envs_per_context=1)
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(30):
        env.step(rng.integers(0, 2, env.num_envs))
    blob = env.get_state()
    actions = rng.integers(0, 2, (50, env.num_envs))
    first = [env.step(a)[:4] for a in actions]
    env.set_state(blob)
    second = [env.step(a)[:4] for a in actions]
    for x, y in zip(first, second):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)
    assert pickle.loads(blob)["envs"]  # plain pickle, no custom format
    assert set(CARTPOLE_VARIANTS) == set(env.context_names)
