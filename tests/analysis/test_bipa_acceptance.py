"""Acceptance rules and the exact no-op acceptance model, against brute-force enumeration."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessrl.config import ConfigError
from harnessrl.evaluate.acceptance import (
    AcceptanceConfig, accept_probability, decide, expected_gain_given_accept, poisson_binomial_pmf, tie_probability,
)

GEPA = AcceptanceConfig()


def brute(cfg, p_par, p_cand, bar=None):
    """Enumerate every outcome vector of both evaluations."""
    total = gain = 0.0
    for xs in itertools.product([0, 1], repeat=len(p_cand)):
        pc = np.prod([q if x else 1 - q for q, x in zip(p_cand, xs)])
        if cfg.role == "validation":
            total += pc * decide(cfg, bar, np.array(xs)).accepted
            continue
        for ys in itertools.product([0, 1], repeat=len(p_par)):
            pp = np.prod([q if y else 1 - q for q, y in zip(p_par, ys)])
            ok = decide(cfg, np.array(ys), np.array(xs)).accepted
            total += pc * pp * ok
            gain += pc * pp * ok * (sum(xs) - sum(ys))
    return total, gain


def test_half_minus_ties_closed_form():
    # three tasks at p = 0.5: P(tie) = (1 + 9 + 9 + 1) / 64, accept = (1 - tie) / 2 = 11/32
    p = np.full(3, 0.5)
    assert tie_probability(p) == pytest.approx(20 / 64)
    assert accept_probability(GEPA, p) == pytest.approx(11 / 32)
    assert accept_probability(GEPA, np.ones(3)) == 0.0  # a task set always solved never lets a no-op through


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=4), st.lists(st.floats(0, 1), min_size=1, max_size=4),
       st.sampled_from([0.0, 1.0, 2.0]))
def test_exact_probability_matches_enumeration(pp, pc, margin):
    m = min(len(pp), len(pc))
    pp, pc = np.array(pp[:m]), np.array(pc[:m])
    for rule in ("strict_minibatch", "margin"):
        cfg = AcceptanceConfig(rule=rule, minibatch_size=m, margin=margin)
        prob, gain = brute(cfg, pp, pc)
        assert accept_probability(cfg, pp, pc) == pytest.approx(prob, abs=1e-9)
    noop_prob, noop_gain = brute(GEPA, pp, pp)
    assert accept_probability(GEPA, pp) == pytest.approx((1 - tie_probability(pp)) / 2, abs=1e-9)
    if noop_prob > 1e-12:
        assert expected_gain_given_accept(GEPA, pp) == pytest.approx(noop_gain / noop_prob, rel=1e-6)
    for rule in ("validation", "validation_no_drop"):
        cfg = AcceptanceConfig(rule=rule)
        for bar in (0.0, 0.5, 2 / 3, 1.0):
            assert accept_probability(cfg, pp, pc, parent_score=bar) == pytest.approx(brute(cfg, pp, pc, bar)[0], abs=1e-9)


def test_poisson_binomial_is_a_distribution():
    pmf = poisson_binomial_pmf([0.2, 0.9, 0.5])
    assert pmf.sum() == pytest.approx(1) and pmf[0] == pytest.approx(0.8 * 0.1 * 0.5)
    with pytest.raises(ValueError):
        poisson_binomial_pmf([1.5])


def test_decisions_and_errors():
    d = decide(GEPA, np.array([1, 0, 0]), np.array([1, 1, 0]))
    assert d.accepted and d.parent_score == 1 and d.candidate_score == 2 and ">" in d.reason
    assert not decide(GEPA, np.array([1, 0, 0]), np.array([0, 0, 1])).accepted  # a tie is not strict improvement
    m = AcceptanceConfig(rule="margin", margin=2)
    assert not decide(m, np.array([0, 0, 1]), np.array([1, 1, 0])).accepted
    assert decide(m, np.array([0, 0, 0]), np.array([1, 1, 0])).accepted
    v = AcceptanceConfig(rule="validation")
    assert decide(v, 0.5, np.array([1, 1, 0, 0, 1])).accepted and not decide(v, 0.6, np.array([1, 1, 0, 0, 1])).accepted
    assert decide(AcceptanceConfig(rule="validation_no_drop"), 0.6, np.array([1, 1, 0, 0, 1])).accepted
    with pytest.raises(ConfigError, match="same minibatch"):
        decide(GEPA, np.array([1, 0]), np.array([1, 0, 0]))
    assert GEPA.role == "minibatch" and v.role == "validation"
