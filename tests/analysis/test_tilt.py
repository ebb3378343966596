"""The tilt model against closed forms and the exact bandit optimum."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harnessrl.analysis import tilt as tl
from harnessrl.analysis.klcontrol import bandit_optimum

LABELS = ["miss", "success", "wrong_object"]


def test_outcome_constant_rewards_have_the_closed_form() -> None:
    # three distinct trajectories, one per outcome, exact probabilities
    p0 = np.array([0.5, 0.3, 0.2])
    r = np.array([0.0, 1.0, 0.7])
    for beta in (0.1, 0.5, 2.0):
        pred = tl.tilt(np.array(LABELS, dtype=object), r, beta, labels=LABELS, log_weights=np.log(p0))
        expected = p0 * np.exp(r / beta) / np.sum(p0 * np.exp(r / beta))
        np.testing.assert_allclose(pred, expected, rtol=1e-12)
    np.testing.assert_allclose(tl.tilt(np.array(LABELS, dtype=object), r, math.inf, labels=LABELS, log_weights=np.log(p0)), p0)


def test_equals_the_bandit_optimum_summed_by_outcome() -> None:
    rng = np.random.default_rng(0)
    n = 12
    p0 = rng.dirichlet(np.ones(n))
    r = rng.uniform(0, 1, n)
    outcome = np.array(LABELS, dtype=object)[rng.integers(0, 3, n)]
    pi_star, _ = bandit_optimum(p0, r, 0.3)
    expected = [pi_star[outcome == lab].sum() for lab in LABELS]
    np.testing.assert_allclose(tl.tilt(outcome, r, 0.3, labels=LABELS, log_weights=np.log(p0)), expected, rtol=1e-12)


def test_monte_carlo_samples_converge_and_the_ci_covers() -> None:
    rng = np.random.default_rng(1)
    p0 = np.array([0.5, 0.3, 0.2])
    mean_r = np.array([0.1, 0.9, 0.6])
    idx = rng.choice(3, size=4000, p=p0)
    r = np.clip(mean_r[idx] + rng.normal(0, 0.1, len(idx)), 0, 1)
    outcomes = np.array(LABELS, dtype=object)[idx]
    beta = 0.25
    # exact: p'(o) ∝ p0(o) E[exp(r/beta) | o] with r ~ clip(N(mu_o, 0.1)); estimate E by a huge sample
    big = np.clip(mean_r[:, None] + np.random.default_rng(9).normal(0, 0.1, (3, 400_000)), 0, 1)
    truth = p0 * np.exp(big / beta).mean(1)
    truth /= truth.sum()
    est = tl.predicted_frequencies(outcomes, r, beta, LABELS, n_boot=500)
    for e, t in zip(est, truth):
        assert e.lo <= t <= e.hi
        assert e.value == pytest.approx(t, abs=0.03)


def test_contexts_are_normalised_separately() -> None:
    # context A: the wrong object pays; context B: only success pays. Pooling would let A's
    # large exp(r/beta) swamp B; per-context tilting keeps each context's mass.
    out = np.array(["success", "wrong_object", "miss", "success", "wrong_object", "miss"], dtype=object)
    r = np.array([1.0, 3.0, 0.0, 1.0, 0.0, 0.0])
    ctx = np.array([0, 0, 0, 1, 1, 1])
    beta = 0.5
    pred = tl.tilt(out, r, beta, labels=LABELS, contexts=ctx)
    a, _ = bandit_optimum(np.full(3, 1 / 3), r[:3], beta)
    b, _ = bandit_optimum(np.full(3, 1 / 3), r[3:], beta)
    expected = {lab: 0.5 * (a[out[:3] == lab].sum() + b[out[3:] == lab].sum()) for lab in LABELS}
    np.testing.assert_allclose(pred, [expected[lab] for lab in LABELS], rtol=1e-12)
    pooled = tl.tilt(out, r, beta, labels=LABELS)
    assert pooled[2] > pred[2]  # pooling overstates the context where the wrong object pays


def test_gating_returns_rejected_outcomes_to_their_base_weight() -> None:
    rng = np.random.default_rng(2)
    idx = rng.choice(3, size=3000, p=[0.5, 0.3, 0.2])
    outcomes = np.array(LABELS, dtype=object)[idx]
    r = np.array([0.05, 0.9, 0.7])[idx] + rng.normal(0, 0.05, len(idx))
    accepted = outcomes == "success"
    base = tl.tilt(outcomes, r, math.inf, labels=LABELS)
    learned = tl.tilt(outcomes, r, 1.0, labels=LABELS)
    gated = tl.tilt(outcomes, tl.gate(r, accepted), 1.0, labels=LABELS)
    assert learned[2] > base[2]  # the learned reward grows the wrong object...
    assert learned[1] > base[1]  # ...together with success
    assert gated[2] < base[2]  # the verifier redirects it
    # rejected outcomes keep their base ratio: wrong_object / miss
    assert gated[2] / gated[0] == pytest.approx(base[2] / base[0], rel=1e-12)
    assert gated[1] > learned[1]
    # a strong enough tilt eventually favours the higher-reward success over the wrong object
    assert tl.tilt(outcomes, r, 0.05, labels=LABELS)[2] < base[2]


def test_first_order_matches_at_large_beta_and_fit_beta_recovers() -> None:
    rng = np.random.default_rng(3)
    idx = rng.choice(3, size=2000, p=[0.5, 0.3, 0.2])
    outcomes = np.array(LABELS, dtype=object)[idx]
    r = np.array([0.1, 0.9, 0.6])[idx]  # constant within an outcome: first order is exact in log space
    for beta in (0.3, 5.0):
        np.testing.assert_allclose(tl.first_order_tilt(outcomes, r, beta, labels=LABELS), tl.tilt(outcomes, r, beta, labels=LABELS), rtol=1e-10)
    noisy = r + rng.normal(0, 0.3, len(r))
    err_big = np.abs(tl.first_order_tilt(outcomes, noisy, 20.0, labels=LABELS) - tl.tilt(outcomes, noisy, 20.0, labels=LABELS)).max()
    err_small = np.abs(tl.first_order_tilt(outcomes, noisy, 0.2, labels=LABELS) - tl.tilt(outcomes, noisy, 0.2, labels=LABELS)).max()
    assert err_big < 1e-3 < err_small
    target = tl.tilt(outcomes, noisy, 0.37, labels=LABELS)
    assert tl.fit_beta(outcomes, noisy, target, LABELS) == pytest.approx(0.37, rel=1e-3)


def test_tables_and_errors() -> None:
    outcomes = np.array(["success", "miss", "wrong_object", "success"], dtype=object)
    r = np.array([1.0, 0.0, 0.5, 0.8])
    rows = tl.tilt_table(outcomes, r, [0.5, 1.0], accepted=outcomes == "success", n_boot=20)
    assert len(rows) == 2 * 2 * 3
    assert {row["reward"] for row in rows} == {"reward", "verifier-gated"}
    by = {(x["reward"], x["beta"], x["outcome"]): x for x in rows}
    assert by[("reward", 0.5, "miss")]["base"] == 0.25
    rw = {x["outcome"]: x for x in tl.reward_by_outcome(outcomes, r)}
    assert rw["success"]["mean_reward"] == pytest.approx(0.9)
    obs = tl.observed_frequencies(outcomes, LABELS)
    assert obs[1].value == 0.5 and obs[1].lo < 0.5 < obs[1].hi
    with pytest.raises(ValueError, match="beta"):
        tl.tilt(outcomes, r, 0.0)
    with pytest.raises(ValueError, match="not among labels"):
        tl.tilt(outcomes, r, 1.0, labels=["success"])
