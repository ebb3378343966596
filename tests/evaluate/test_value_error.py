"""Per-context value error: Monte-Carlo returns against a loop reference, validity near cuts, per-context MSE."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from harnessrl.envs.bandit import bandit_contexts
from harnessrl.envs.multicontext import MultiContextVectorEnv
from harnessrl.evaluate.value_error import mc_returns, measure_value_error, value_error_by_context


def _reference(rewards, term, trunc, gamma, tol):
    T, N = rewards.shape
    ret, valid = np.zeros((T, N)), np.zeros((T, N), bool)
    for n in range(N):
        for t in range(T):
            g, u = 0.0, t
            while True:  # walk forward to the end of t's episode or the window
                g += gamma ** (u - t) * rewards[u, n]
                if term[u, n] or trunc[u, n] or u == T - 1:
                    break
                u += 1
            ret[t, n] = g
            cut_weight = gamma ** (u - t + 1)
            valid[t, n] = bool(term[u, n]) or cut_weight <= tol + 1e-12
    return ret, valid


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.integers(1, 4), st.sampled_from([0.0, 0.5, 0.9]), st.data())
def test_mc_returns_match_a_forward_loop(T, N, gamma, data):
    rewards = data.draw(hnp.arrays(np.float64, (T, N), elements=st.floats(-3, 3)))
    term = data.draw(hnp.arrays(np.bool_, (T, N)))
    trunc = data.draw(hnp.arrays(np.bool_, (T, N))) & ~term
    ret, valid = mc_returns(rewards, term, trunc, gamma, tail_tol=0.3)
    rret, rvalid = _reference(rewards, term, trunc, gamma, 0.3)
    np.testing.assert_allclose(ret, rret, atol=1e-9)
    np.testing.assert_array_equal(valid, rvalid)


def test_steps_just_before_a_time_limit_are_left_out():
    T = 40
    rewards = np.ones((T, 1))
    trunc = np.zeros((T, 1), bool)
    trunc[-1] = True
    ret, valid = mc_returns(rewards, np.zeros((T, 1), bool), trunc, gamma=0.9, tail_tol=0.05)
    horizon = math.ceil(math.log(0.05) / math.log(0.9))  # 29 steps of lookahead needed
    assert valid[: T - horizon + 1].all() and not valid[T - horizon + 1:].any()
    term = trunc.copy()
    _, valid = mc_returns(rewards, term, np.zeros((T, 1), bool), gamma=0.9)
    assert valid.all()  # termination: every return is exact


def test_value_error_by_context():
    values = np.array([[1.0, 5.0], [2.0, 5.0]])
    returns = np.array([[0.0, 5.0], [4.0, 7.0]])
    valid = np.array([[True, True], [True, False]])
    out = value_error_by_context(values, returns, valid, np.array([0, 1]), 3, ("a", "b", "c"))
    assert out.mse[:2].tolist() == [2.5, 0.0] and np.isnan(out.mse[2])
    assert out.bias[:2].tolist() == [-0.5, 0.0] and out.count.tolist() == [2, 1, 0]
    assert out.as_rows()[0] == {"context": "a", "mse": 2.5, "bias": -0.5, "count": 2}


def test_measure_on_the_bandit_separates_shared_from_true_values():
    offsets, noise = (0.0, 4.0), 0.5
    env = MultiContextVectorEnv(bandit_contexts(offsets, (0.0, 1.0), noise), envs_per_context=2)
    act = lambda obs, ctx: np.ones(len(obs), dtype=np.int64)  # noqa: E731  always the better arm
    true = lambda obs, ctx: np.asarray(offsets)[ctx] + 1.0  # noqa: E731
    shared = lambda obs, ctx: np.full(len(obs), np.mean(offsets) + 1.0)  # noqa: E731
    t = measure_value_error(env, act, true, steps=400, gamma=0.99)
    s = measure_value_error(env, act, shared, steps=400, gamma=0.99)
    assert t.mse == pytest.approx([noise**2] * 2, rel=0.15)  # only the reward noise remains
    assert s.mse == pytest.approx([4.0 + noise**2] * 2, rel=0.1)  # + (offset - mean offset)^2
    assert s.bias[0] == pytest.approx(2.0, abs=0.1) and s.bias[1] == pytest.approx(-2.0, abs=0.1)


def test_a_time_limit_that_is_part_of_the_task_counts_as_an_end():
    from harnessrl.envs.multicontext import ContextSpec

    env = MultiContextVectorEnv([ContextSpec("short", "CartPole-v1", make_kwargs={"max_episode_steps": 5})])
    balance = lambda obs, ctx: (obs[:, 2] > 0).astype(np.int64)  # noqa: E731  push the cart under the pole
    zero = lambda obs, ctx: np.zeros(len(obs))  # noqa: E731
    bootstrapped = measure_value_error(env, balance, zero, steps=20, gamma=0.99)
    terminal = measure_value_error(env, balance, zero, steps=20, gamma=0.99, truncation_is_terminal=True)
    assert bootstrapped.count[0] == 0  # every episode hits the 5-step limit: no return is complete
    assert terminal.count[0] == 20 and terminal.mse[0] > 0
