"""klcontrol against brute force: every trajectory, every deterministic policy, random policies."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessrl.analysis import klcontrol as kc


def random_mdp(rng: np.random.Generator, S: int = 3, A: int = 2, H: int = 3, deterministic: bool = False) -> kc.FiniteMDP:
    if deterministic:
        P = np.zeros((S, A, S))
        nxt = rng.integers(0, S, size=(S, A))
        P[np.arange(S)[:, None], np.arange(A)[None, :], nxt] = 1.0
    else:
        P = rng.dirichlet(np.ones(S), size=(S, A))
    R = rng.normal(size=(S, A))
    mu = rng.dirichlet(np.ones(S))
    return kc.FiniteMDP(P, R, mu, H)


def random_policy(rng: np.random.Generator, mdp: kc.FiniteMDP, time_dependent: bool = True) -> np.ndarray:
    shape = (mdp.horizon, mdp.num_states) if time_dependent else (mdp.num_states,)
    return rng.dirichlet(np.ones(mdp.num_actions) * 0.7, size=shape)


def trajectories(mdp: kc.FiniteMDP):
    """Every (s_0, a_0, ..., s_{H-1}, a_{H-1}) with nonzero dynamics probability."""
    S, A, H = mdp.num_states, mdp.num_actions, mdp.horizon
    for states in itertools.product(range(S), repeat=H):
        for actions in itertools.product(range(A), repeat=H):
            p_dyn = mdp.initial[states[0]]
            for t in range(H - 1):
                p_dyn *= mdp.transitions[states[t], actions[t], states[t + 1]]
            if p_dyn > 0:
                yield states, actions, p_dyn


def brute_force(mdp: kc.FiniteMDP, policy: np.ndarray, ref: np.ndarray):
    """E[R] and KL(P_pi || P_ref) by summing over all trajectories (independent of klcontrol)."""
    pi = mdp.over_time(policy)
    rf = mdp.over_time(ref)
    ret, kl = 0.0, 0.0
    for states, actions, p_dyn in trajectories(mdp):
        p_pi = p_dyn * np.prod([pi[t, s, a] for t, (s, a) in enumerate(zip(states, actions))])
        if p_pi == 0:
            continue
        R = sum(mdp.rewards[s, a] for s, a in zip(states, actions))
        with np.errstate(divide="ignore"):  # a policy off the reference's support has KL = inf
            log_ratio = sum(np.log(pi[t, s, a]) - np.log(rf[t, s, a]) for t, (s, a) in enumerate(zip(states, actions)))
        ret += p_pi * R
        kl += p_pi * log_ratio
    return ret, kl


def deterministic_policies(mdp: kc.FiniteMDP, support: np.ndarray | None = None):
    S, A, H = mdp.num_states, mdp.num_actions, mdp.horizon
    for choice in itertools.product(range(A), repeat=H * S):
        pi = np.zeros((H, S, A))
        pi[np.repeat(np.arange(H), S), np.tile(np.arange(S), H), choice] = 1.0
        if support is not None and (pi > 0)[~support].any():
            continue
        yield pi


@pytest.mark.parametrize("deterministic", [False, True])
def test_evaluation_matches_trajectory_enumeration(deterministic: bool) -> None:
    rng = np.random.default_rng(0)
    mdp = random_mdp(rng, deterministic=deterministic)
    ref = random_policy(rng, mdp, time_dependent=False)
    for _ in range(5):
        pi = random_policy(rng, mdp)
        ret, kl = brute_force(mdp, pi, ref)
        assert kc.expected_return(mdp, pi) == pytest.approx(ret, abs=1e-10)
        assert kc.trajectory_kl(mdp, pi, ref) == pytest.approx(kl, abs=1e-10)


@pytest.mark.parametrize("beta", [0.3, 1.0, 5.0])
@pytest.mark.parametrize("deterministic", [False, True])
def test_identity_and_optimality_over_all_deterministic_policies(beta: float, deterministic: bool) -> None:
    rng = np.random.default_rng(1 + int(deterministic))
    mdp = random_mdp(rng, deterministic=deterministic)
    ref = random_policy(rng, mdp, time_dependent=False)
    sol = kc.soft_value_iteration(mdp, ref, beta)
    # pi* attains V*, checked by enumeration rather than by klcontrol's own evaluator
    ret, kl = brute_force(mdp, sol.policy, ref)
    assert ret - beta * kl == pytest.approx(sol.value, abs=1e-9)
    best = -np.inf
    count = 0
    for pi in deterministic_policies(mdp):
        ret, kl = brute_force(mdp, pi, ref)
        J = ret - beta * kl
        assert J == pytest.approx(sol.value - beta * kc.mismatch(mdp, pi, sol), abs=1e-9)
        assert J <= sol.value + 1e-12
        best = max(best, J)
        count += 1
    assert count == 2 ** (3 * 3)
    assert best < sol.value  # with beta > 0 no deterministic policy is optimal


@given(seed=st.integers(0, 10_000), beta=st.floats(0.05, 20.0), deterministic=st.booleans())
@settings(max_examples=40, deadline=None)
def test_identity_for_random_stochastic_policies(seed: int, beta: float, deterministic: bool) -> None:
    rng = np.random.default_rng(seed)
    mdp = random_mdp(rng, S=3, A=3, H=3, deterministic=deterministic)
    ref = random_policy(rng, mdp, time_dependent=bool(seed % 2))
    sol = kc.soft_value_iteration(mdp, ref, beta)
    for _ in range(4):
        pi = random_policy(rng, mdp)
        J = kc.objective(mdp, pi, ref, beta)
        assert J == pytest.approx(sol.value - beta * kc.mismatch(mdp, pi, sol), rel=1e-9, abs=1e-9)
        assert J <= sol.value + 1e-9
    assert kc.objective(mdp, sol.policy, ref, beta) == pytest.approx(sol.value, rel=1e-9, abs=1e-9)


def test_hard_limit_is_best_return_inside_the_support() -> None:
    rng = np.random.default_rng(3)
    mdp = random_mdp(rng)
    ref = random_policy(rng, mdp, time_dependent=False)
    ref[0] = [1.0, 0.0]  # state 0: the harness never offers action 1
    support = np.broadcast_to(ref > 0, (mdp.horizon, *ref.shape))
    sol0 = kc.soft_value_iteration(mdp, ref, 0.0)
    best = max(brute_force(mdp, pi, ref)[0] for pi in deterministic_policies(mdp, support))
    unrestricted = max(brute_force(mdp, pi, ref)[0] for pi in deterministic_policies(mdp))
    assert sol0.value == pytest.approx(best, abs=1e-12)
    assert kc.expected_return(mdp, sol0.policy) == pytest.approx(best, abs=1e-12)
    assert unrestricted >= best
    # beta -> 0: the soft ceiling converges to the hard one
    assert kc.soft_value_iteration(mdp, ref, 1e-3).value == pytest.approx(best, abs=1e-2)
    # beta -> inf: the optimum stays at pi_ref, V* -> E_ref[R]
    assert kc.soft_value_iteration(mdp, ref, 1e6).value == pytest.approx(kc.expected_return(mdp, ref), abs=1e-4)


@pytest.mark.parametrize("beta", [0.2, 1.0])
def test_trajectory_soft_value_equals_v_star_for_deterministic_dynamics(beta: float) -> None:
    """Per start state (per task), V* = beta log E_ref[exp(R/beta)] iff the dynamics are deterministic."""
    for seed, deterministic in [(4, True), (5, False)]:
        rng = np.random.default_rng(seed)
        mdp = random_mdp(rng, deterministic=deterministic)
        ref = random_policy(rng, mdp)
        sol = kc.soft_value_iteration(mdp, ref, beta)
        returns, logw, start = [], [], []
        for states, actions, p_dyn in trajectories(mdp):
            returns.append(sum(mdp.rewards[s, a] for s, a in zip(states, actions)))
            p_rest = p_dyn / mdp.initial[states[0]]  # condition on the start state
            logw.append(np.log(p_rest) + sum(np.log(ref[t, s, a]) for t, (s, a) in enumerate(zip(states, actions))))
            start.append(states[0])
        returns, logw, start = np.array(returns), np.array(logw), np.array(start)
        per_start = np.array([kc.soft_value(returns[start == s], beta, logw[start == s]) for s in range(mdp.num_states)])
        if deterministic:
            np.testing.assert_allclose(per_start, sol.v[0], atol=1e-10)
        else:  # the policy cannot steer the dynamics: log-mean-exp over trajectories overstates V*
            assert (per_start > sol.v[0] + 1e-6).all()
        # The start state is not steerable either: pooling over starts overstates the mean of V*.
        pooled = float(kc.soft_value(returns, beta, logw + np.log(mdp.initial[start])))
        assert pooled > sol.value


def test_bandit_and_binary_closed_forms() -> None:
    rng = np.random.default_rng(6)
    R = rng.normal(size=(4, 5))
    ref = rng.dirichlet(np.ones(5), size=4)
    for beta in (0.0, 0.1, 1.0, 10.0):
        pi, v = kc.bandit_optimum(ref, R, beta)
        sol = kc.soft_value_iteration(kc.bandit(R), ref, beta)
        np.testing.assert_allclose(pi, sol.policy[0], atol=1e-12)
        np.testing.assert_allclose(v, sol.v[0], atol=1e-12)
    for p in (0.0, 0.02, 0.5, 1.0):
        for beta in (0.0, 0.01, 0.3, 3.0):
            ref2 = np.array([1 - p, p])
            _, v = kc.bandit_optimum(ref2, np.array([0.0, 1.0]), beta)
            assert float(kc.binary_soft_value(p, beta)) == pytest.approx(float(v), abs=1e-12)
    # Monte Carlo soft value from samples converges to the closed form
    samples = (rng.random(200_000) < 0.2).astype(float)
    assert float(kc.soft_value(samples, 0.5)) == pytest.approx(float(kc.binary_soft_value(0.2, 0.5)), abs=0.01)
    assert float(kc.soft_value(samples, 0.0)) == 1.0


def test_log_odds_decomposition_is_exact_and_value_correction_is_advantage() -> None:
    rng = np.random.default_rng(7)
    mdp = random_mdp(rng, S=4, A=3, H=2)
    ref = random_policy(rng, mdp)
    beta = 0.7
    sol = kc.soft_value_iteration(mdp, ref, beta)
    a = rng.integers(0, 3, size=(2, 4))
    b = (a + 1) % 3
    lo = kc.log_odds_decomposition(np.log(ref), sol.q, beta, a, b)
    logpi = np.log(sol.policy)
    direct = np.take_along_axis(logpi, a[..., None], -1)[..., 0] - np.take_along_axis(logpi, b[..., None], -1)[..., 0]
    np.testing.assert_allclose(lo.total, direct, atol=1e-10)
    np.testing.assert_allclose(lo.harness_preference + lo.value_correction, lo.total)
    adv = kc.value_correction(logpi, np.log(ref), beta)
    np.testing.assert_allclose(adv, sol.q - sol.v[:-1, :, None], atol=1e-10)
    # Scored as an observed policy, pi* gives the same split.
    pick = lambda x, i: np.take_along_axis(x, i[..., None], -1)[..., 0]  # noqa: E731
    obs = kc.observed_log_odds(pick(logpi, a), pick(logpi, b), pick(np.log(ref), a), pick(np.log(ref), b))
    np.testing.assert_allclose(obs.value_correction, lo.value_correction, atol=1e-10)


def test_preference_carryover_slope() -> None:
    rng = np.random.default_rng(8)
    pref = rng.normal(size=500)
    kept = kc.LogOdds(total=pref + 0.3, harness_preference=pref, value_correction=np.full(500, 0.3))
    erased = kc.LogOdds(total=rng.normal(size=500), harness_preference=pref, value_correction=np.zeros(500))
    assert kc.preference_carryover(kept)["slope"] == pytest.approx(1.0)
    assert abs(kc.preference_carryover(erased)["slope"]) < 0.2


def test_bad_inputs_name_the_field() -> None:
    with pytest.raises(ValueError, match="transitions"):
        kc.FiniteMDP(np.ones((2, 2, 2)), np.zeros((2, 2)), np.array([0.5, 0.5]), 2)
    mdp = random_mdp(np.random.default_rng(0))
    with pytest.raises(ValueError, match="pi_ref"):
        kc.soft_value_iteration(mdp, np.ones((3, 2)), 1.0)
    with pytest.raises(ValueError, match="beta"):
        kc.soft_value_iteration(mdp, np.full((3, 2), 0.5), -1.0)
