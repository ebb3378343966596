"""Evaluation on levels: exact episode counts per env, per-context returns, Procgen normalisation, IQM aggregate."""

from __future__ import annotations

import numpy as np
import pytest

from harnessrl.envs.levels import minigrid_test_context
from harnessrl.envs.multicontext import MultiContextVectorEnv, cartpole_contexts
from harnessrl.evaluate.levels import PROCGEN_EASY, aggregate_iqm, evaluate_episodes, procgen_normalized, returns_by_context


def test_first_k_episodes_of_every_env():
    env = MultiContextVectorEnv(cartpole_contexts(["standard", "double-reward"]), envs_per_context=2)
    eps = evaluate_episodes(env, lambda obs, ctx: np.zeros(len(obs), dtype=np.int64), episodes_per_env=3)
    assert sorted(e.env for e in eps) == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    by_ctx = returns_by_context(eps, 2)
    assert by_ctx[1] == pytest.approx(2 * np.mean([e.length for e in eps if e.context == 1]))


def test_unseen_levels_are_played():
    spec = minigrid_test_context("MiniGrid-Empty-Random-5x5-v0", num_test_levels=4)
    env = MultiContextVectorEnv([spec], envs_per_context=2)
    eps = evaluate_episodes(env, lambda obs, ctx: np.full(len(obs), 2), episodes_per_env=2, max_steps=10_000)
    assert len(eps) == 4 and all(e.level in spec.levels for e in eps)


def test_procgen_normalisation_and_iqm():
    assert len(PROCGEN_EASY) == 16
    assert procgen_normalized("coinrun", np.array([5.0, 10.0, 7.5])).tolist() == [0.0, 1.0, 0.5]
    with pytest.raises(KeyError, match="coinrun"):
        procgen_normalized("pong", np.array([1.0]))
    scores = np.array([[0.0, 1.0, 0.5, 0.5], [0.2, 0.8, 0.4, 0.6], [0.1, 0.9, 0.5, 0.5]])
    est = aggregate_iqm(scores)
    assert est.lo <= est.value <= est.hi and est.value == pytest.approx(0.5, abs=0.05)


def test_iqm_change_against_brute_force_and_at_the_floor():
    from harnessrl.evaluate.levels import iqm_change

    base = np.array([[0.2, 0.4], [0.3, 0.5], [0.25, 0.45]])  # (seeds, games)
    new = base * 1.5
    est = iqm_change(base, new)
    assert est.value == pytest.approx(0.5) and est.lo <= 0.5 <= est.hi
    # independent resampling of each arm: the CI is wider than the zero-width one a paired ratio would give
    assert est.hi - est.lo > 0.05
    same = iqm_change(base, base)
    assert same.value == pytest.approx(0.0) and same.lo < 0 < same.hi
    assert np.isnan(iqm_change(np.zeros((3, 2)), new).value)  # a ratio to the floor is not reported
    tail = iqm_change(np.array([[0.0], [0.0], [0.3]]), np.full((3, 1), 0.3))  # base IQM > 0, some resamples at 0
    assert tail.value == pytest.approx(2.0) and tail.hi == np.inf
