"""Per-context normalisation: running moments per group, context vs pooled statistics, exact state round trip."""

from __future__ import annotations

import numpy as np
import pytest

from harnessrl.envs.normalize import ObsNormalizer, RewardNormalizer, RunningMoments


def test_running_moments_match_numpy_per_group():
    rng = np.random.default_rng(0)
    m = RunningMoments(3, (2,), eps=0.0)
    data = {g: [] for g in range(3)}
    for _ in range(20):
        g = rng.integers(0, 3, 7)
        x = rng.normal(size=(7, 2)) * (1 + g[:, None]) + 10 * g[:, None]
        m.update(x, g)
        for gi, xi in zip(g, x):
            data[gi].append(xi)
    for g in range(3):
        arr = np.array(data[g])
        np.testing.assert_allclose(m.mean[g], arr.mean(0), rtol=1e-10)
        np.testing.assert_allclose(m.var[g], arr.var(0), rtol=1e-10)
        assert m.count[g] == len(arr)


def test_context_statistics_separate_scales_that_pooling_mixes():
    rng = np.random.default_rng(1)
    ctx = np.array([0, 0, 1, 1])
    per, pooled = ObsNormalizer("context", 2, (1,)), ObsNormalizer("pooled", 2, (1,))
    outs_a, outs_b = [], []
    for t in range(400):
        obs = np.where(ctx[:, None] == 0, rng.normal(0, 1, (4, 1)), rng.normal(100, 10, (4, 1)))
        a, b = per(obs, ctx), pooled(obs, ctx)
        if t >= 200:
            outs_a.append(a[:, 0])
            outs_b.append(b[:, 0])
    a, b = np.array(outs_a), np.array(outs_b)  # (200, 4)
    for k in (0, 1):  # each context centred on its own mean with unit spread
        assert abs(a[:, ctx == k].mean()) < 0.2 and 0.8 < a[:, ctx == k].std() < 1.2
    assert b[:, ctx == 0].mean() < -0.5 and b[:, ctx == 1].mean() > 0.5  # pooled: one mean between the two
    assert b[:, ctx == 0].std() < 0.1  # and context 0's own variation squashed by context 1's scale
    none = ObsNormalizer("none", 2, (1,))
    assert none(np.ones((4, 1)), ctx).tolist() == [[1.0]] * 4


def test_reward_normaliser_scales_each_context_by_its_own_return_std():
    ctx = np.array([0, 1])
    norm = RewardNormalizer("context", 2, 2, gamma=0.9)
    pooled = RewardNormalizer("pooled", 2, 2, gamma=0.9)
    for t in range(400):
        r = np.array([1.0, 50.0])
        done = np.array([t % 20 == 19] * 2)
        out, out_p = norm(r, ctx, done), pooled(r, ctx, done)
    assert out[0] == pytest.approx(out[1], rel=1e-6)  # same shape of returns, different scale: same normalised reward
    assert out_p[1] / out_p[0] == pytest.approx(50.0)  # pooled keeps the 50x difference
    np.testing.assert_allclose(norm.scale(ctx) * out, [1.0, 50.0], rtol=1e-6)


def test_state_dict_round_trip_and_bad_mode():
    a = RewardNormalizer("context", 2, 3, gamma=0.99)
    a(np.array([1.0, 2.0, 3.0]), np.array([0, 1, 1]), np.zeros(3, bool))
    b = RewardNormalizer("context", 2, 3, gamma=0.99)
    b.load_state_dict(a.state_dict())
    x = np.array([0.5, 1.5, -1.0])
    np.testing.assert_array_equal(a(x, np.array([0, 1, 1]), np.zeros(3, bool)), b(x, np.array([0, 1, 1]), np.zeros(3, bool)))
    with pytest.raises(ValueError, match="per_env"):
        ObsNormalizer("per_env", 2, (1,))
    with pytest.raises(ValueError, match="pooled, context"):
        RewardNormalizer("x", 2, 2, 0.9)
