"""Exact KL-regularised control on finite MDPs and bandits (ANCHORS §1).

A harness h fixes a reference policy pi_ref (the base model under that harness). The
objective is `J(pi) = E_pi[R] - beta KL(pi || pi_ref)`, KL taken over whole trajectories
(dynamics cancel, so it is the expected sum of per-state KLs). Everything here is exact
arithmetic on arrays — no sampling — so the tests can check it against brute force:

    soft value iteration   Q*_t(s,a) = r(s,a) + E[V*_{t+1}(s')]
                           V*_t(s)   = beta log sum_a pi_ref(a|s) exp(Q*_t(s,a)/beta)
                           pi*_t     = pi_ref exp(Q*_t/beta) / Z_t         (Z_t = exp(V*_t/beta))
    identity               J(pi) = V*_0 - beta KL(pi || pi*)               for every pi
    log-odds               log pi*(a)/pi*(b) = log pi_ref(a)/pi_ref(b) + (Q*(a) - Q*(b))/beta
                           (harness preference)          (value correction)

`beta = 0` is the hard limit: the best return inside the support of pi_ref.

Array shapes: S states, A actions, H horizon. Policies are (H, S, A) (time-dependent) or
(S, A) (stationary, broadcast over time). The LM-side analyses reuse `log_odds_decomposition`,
`value_correction` and `soft_value` on log-probs read from records.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

# ----------------------------------------------------------------------------------------
# The MDP


@dataclass(frozen=True)
class FiniteMDP:
    """A finite-horizon MDP: transitions (S, A, S), rewards (S, A), initial (S,), horizon H.

    Episodes last exactly `horizon` steps; model early termination with an absorbing,
    zero-reward state.
    """

    transitions: np.ndarray
    rewards: np.ndarray
    initial: np.ndarray
    horizon: int

    def __post_init__(self) -> None:
        P, R, mu = (np.asarray(x, dtype=np.float64) for x in (self.transitions, self.rewards, self.initial))
        object.__setattr__(self, "transitions", P)
        object.__setattr__(self, "rewards", R)
        object.__setattr__(self, "initial", mu)
        if P.ndim != 3 or P.shape[0] != P.shape[2]:
            raise ValueError(f"FiniteMDP.transitions must be (S, A, S); got {P.shape}")
        S, A, _ = P.shape
        if R.shape != (S, A):
            raise ValueError(f"FiniteMDP.rewards must be (S, A) = {(S, A)}; got {R.shape}")
        if mu.shape != (S,):
            raise ValueError(f"FiniteMDP.initial must be (S,) = {(S,)}; got {mu.shape}")
        if not np.allclose(P.sum(-1), 1.0) or (P < 0).any():
            raise ValueError("FiniteMDP.transitions: every P[s, a, :] must be a probability vector")
        if not np.isclose(mu.sum(), 1.0) or (mu < 0).any():
            raise ValueError("FiniteMDP.initial must be a probability vector")
        if int(self.horizon) < 1:
            raise ValueError(f"FiniteMDP.horizon must be >= 1; got {self.horizon}")

    @property
    def num_states(self) -> int:
        return self.transitions.shape[0]

    @property
    def num_actions(self) -> int:
        return self.transitions.shape[1]

    @property
    def deterministic(self) -> bool:
        """True when every (s, a) leads to one next state: then trajectory-level formulas hold."""
        return bool(np.all(np.isclose(self.transitions.max(-1), 1.0)))

    def over_time(self, policy: np.ndarray, name: str = "policy") -> np.ndarray:
        """(S, A) or (H, S, A) -> (H, S, A), checked to be a conditional distribution."""
        pi = np.asarray(policy, dtype=np.float64)
        S, A, H = self.num_states, self.num_actions, self.horizon
        if pi.shape == (S, A):
            pi = np.broadcast_to(pi, (H, S, A))
        if pi.shape != (H, S, A):
            raise ValueError(f"{name} must be (S, A) = {(S, A)} or (H, S, A) = {(H, S, A)}; got {pi.shape}")
        if (pi < 0).any() or not np.allclose(pi.sum(-1), 1.0):
            raise ValueError(f"{name}: every row must be a probability vector over actions")
        return pi


def bandit(rewards: np.ndarray) -> FiniteMDP:
    """A one-step MDP with one state per context: rewards (C, A) -> contextual bandit.

    The initial distribution is uniform over contexts.
    """
    R = np.atleast_2d(np.asarray(rewards, dtype=np.float64))
    C, A = R.shape
    P = np.zeros((C, A, C))
    P[np.arange(C), :, np.arange(C)] = 1.0  # the state never matters after the one step
    return FiniteMDP(P, R, np.full(C, 1.0 / C), horizon=1)


def _log(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p)


# ----------------------------------------------------------------------------------------
# Soft value iteration: the harness-optimal policy pi*_h


@dataclass(frozen=True)
class SoftSolution:
    """The KL-regularised optimum. q (H, S, A), v (H+1, S) with v[H] = 0, policy (H, S, A)."""

    beta: float
    q: np.ndarray
    v: np.ndarray
    policy: np.ndarray
    value: float  # V*_0 averaged over the initial distribution: the soft ceiling


def soft_value_iteration(mdp: FiniteMDP, pi_ref: np.ndarray, beta: float) -> SoftSolution:
    """Backward induction for `max_pi E[R] - beta KL(pi || pi_ref)`.

    beta > 0 gives the soft optimum; beta = 0 the best return inside the support of pi_ref
    (ties split uniformly). Actions with pi_ref = 0 get probability 0 either way.
    """
    if beta < 0:
        raise ValueError(f"beta must be >= 0; got {beta}")
    ref = mdp.over_time(pi_ref, "pi_ref")
    H, S, A = ref.shape
    log_ref = _log(ref)
    q = np.zeros((H, S, A))
    v = np.zeros((H + 1, S))
    policy = np.zeros((H, S, A))
    for t in reversed(range(H)):
        q[t] = mdp.rewards + mdp.transitions @ v[t + 1]
        if beta > 0:
            logits = log_ref[t] + q[t] / beta
            log_z = logsumexp(logits, axis=-1)
            v[t] = beta * log_z
            policy[t] = np.exp(logits - log_z[:, None])
        else:
            masked = np.where(ref[t] > 0, q[t], -np.inf)
            v[t] = masked.max(-1)
            best = np.isclose(masked, v[t][:, None], rtol=0, atol=1e-12) & (ref[t] > 0)
            policy[t] = best / best.sum(-1, keepdims=True)
    return SoftSolution(float(beta), q, v, policy, float(mdp.initial @ v[0]))


# ----------------------------------------------------------------------------------------
# Evaluating any policy: return, KL, objective


def state_distributions(mdp: FiniteMDP, policy: np.ndarray) -> np.ndarray:
    """d_t(s) = P(s_t = s) under `policy`: (H, S)."""
    pi = mdp.over_time(policy)
    d = np.zeros((mdp.horizon, mdp.num_states))
    d[0] = mdp.initial
    for t in range(mdp.horizon - 1):
        d[t + 1] = np.einsum("s,sa,sap->p", d[t], pi[t], mdp.transitions)
    return d


def _kl_rows(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL(p || q) over the last axis; inf where p puts mass outside q's support."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (_log(p) - _log(q)), 0.0)
    return terms.sum(-1)


def expected_return(mdp: FiniteMDP, policy: np.ndarray) -> float:
    """E_pi[sum_t r(s_t, a_t)]."""
    pi = mdp.over_time(policy)
    d = state_distributions(mdp, pi)
    return float(np.einsum("ts,tsa,sa->", d, pi, mdp.rewards))


def trajectory_kl(mdp: FiniteMDP, policy: np.ndarray, other: np.ndarray) -> float:
    """KL between the trajectory distributions of two policies in the same MDP.

    The dynamics cancel: KL = E_policy[sum_t KL(policy(.|s_t) || other(.|s_t))].
    """
    pi = mdp.over_time(policy)
    pj = mdp.over_time(other, "other")
    d = state_distributions(mdp, pi)
    per_state = _kl_rows(pi, pj)  # (H, S)
    with np.errstate(invalid="ignore"):  # inf * 0 for unreachable states
        contrib = np.where(d > 0, d * per_state, 0.0)
    return float(contrib.sum())


def objective(mdp: FiniteMDP, policy: np.ndarray, pi_ref: np.ndarray, beta: float) -> float:
    """J(pi) = E_pi[R] - beta KL(pi || pi_ref)."""
    ret = expected_return(mdp, policy)
    if beta == 0:
        return ret
    return ret - beta * trajectory_kl(mdp, policy, pi_ref)


def mismatch(mdp: FiniteMDP, policy: np.ndarray, solution: SoftSolution) -> float:
    """M(pi) = KL(pi || pi*): the identity says J(pi) = V* - beta M(pi)."""
    return trajectory_kl(mdp, policy, solution.policy)


# ----------------------------------------------------------------------------------------
# Trajectory-level forms (bandits, deterministic dynamics, and sampled returns in records)


def soft_value(returns: np.ndarray, beta: float, log_weights: np.ndarray | None = None, axis: int = -1) -> np.ndarray:
    """V* = beta log E_{tau ~ pi_ref}[exp(R(tau)/beta)], the soft ceiling.

    returns: (..., N) returns of trajectories; log_weights (..., N) their log-probabilities
    under pi_ref (exact enumeration), or None for N samples from pi_ref (Monte Carlo mean).
    beta = 0 gives the max over the support (the hard ceiling).
    """
    R = np.asarray(returns, dtype=np.float64)
    if beta == 0:
        if log_weights is None:
            return R.max(axis)
        return np.where(np.isfinite(np.asarray(log_weights)), R, -np.inf).max(axis)
    if log_weights is None:
        return beta * (logsumexp(R / beta, axis=axis) - np.log(R.shape[axis]))
    return beta * logsumexp(np.asarray(log_weights, dtype=np.float64) + R / beta, axis=axis)


def binary_soft_value(p: np.ndarray | float, beta: float) -> np.ndarray:
    """Closed form for a 0/1 reward with base success probability p: beta log(1 + p (e^{1/beta} - 1))."""
    p = np.asarray(p, dtype=np.float64)
    if beta == 0:
        return (p > 0).astype(np.float64)
    # log(1 - p + p e^{1/beta}) computed without overflowing e^{1/beta} for small beta
    with np.errstate(divide="ignore"):
        return beta * np.logaddexp(np.log1p(-np.minimum(p, 1.0)), _log(p) + 1.0 / beta)


def bandit_optimum(pi_ref: np.ndarray, rewards: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """pi* = pi_ref exp(r/beta)/Z and V* = beta log Z for (..., A) arrays; returns (pi*, V*)."""
    ref = np.asarray(pi_ref, dtype=np.float64)
    r = np.broadcast_to(np.asarray(rewards, dtype=np.float64), ref.shape)
    if beta == 0:
        masked = np.where(ref > 0, r, -np.inf)
        v = masked.max(-1)
        best = np.isclose(masked, v[..., None], rtol=0, atol=1e-12) & (ref > 0)
        return best / best.sum(-1, keepdims=True), v
    logits = _log(ref) + r / beta
    log_z = logsumexp(logits, axis=-1, keepdims=True)
    return np.exp(logits - log_z), beta * log_z[..., 0]


# ----------------------------------------------------------------------------------------
# Log-odds: what a KL-regularised policy keeps from its harness


@dataclass(frozen=True)
class LogOdds:
    """log pi(a)/pi(b) split into the harness's preference and the value correction.

    Arrays broadcast over whatever leading axes the inputs had (states, recorded turns).
    """

    total: np.ndarray  # log pi(a|s) - log pi(b|s) of the (trained / optimal) policy
    harness_preference: np.ndarray  # log pi_ref(a|s) - log pi_ref(b|s)
    value_correction: np.ndarray  # total - harness_preference; = (Q(a) - Q(b))/beta at the optimum


def log_odds_decomposition(log_pi_ref: np.ndarray, q: np.ndarray, beta: float, a: np.ndarray | int, b: np.ndarray | int) -> LogOdds:
    """Exact decomposition of the optimal policy's log-odds between actions a and b.

    log_pi_ref, q: (..., A); a, b: action indices broadcastable to the leading axes.
    """
    if beta <= 0:
        raise ValueError("log-odds need beta > 0 (at beta = 0 the optimum is deterministic)")
    lr = np.asarray(log_pi_ref, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    pref = np.take_along_axis(lr, np.asarray(a)[..., None], -1)[..., 0] - np.take_along_axis(lr, np.asarray(b)[..., None], -1)[..., 0]
    corr = (np.take_along_axis(q, np.asarray(a)[..., None], -1)[..., 0] - np.take_along_axis(q, np.asarray(b)[..., None], -1)[..., 0]) / beta
    return LogOdds(total=pref + corr, harness_preference=pref, value_correction=corr)


def observed_log_odds(logp_a: np.ndarray, logp_b: np.ndarray, ref_logp_a: np.ndarray, ref_logp_b: np.ndarray) -> LogOdds:
    """The same split for a trained policy scored on candidate actions (e.g. an LM's log-probs).

    Under KL-regularised training the value correction estimates (Q(a) - Q(b))/beta; the
    harness preference is what the trained policy carries from its training harness.
    """
    total = np.asarray(logp_a, dtype=np.float64) - np.asarray(logp_b, dtype=np.float64)
    pref = np.asarray(ref_logp_a, dtype=np.float64) - np.asarray(ref_logp_b, dtype=np.float64)
    return LogOdds(total=total, harness_preference=pref, value_correction=total - pref)


def value_correction(log_pi: np.ndarray, log_pi_ref: np.ndarray, beta: float) -> np.ndarray:
    """beta (log pi - log pi_ref): equals Q*(s,a) - V*(s) when pi is the KL-regularised optimum."""
    return beta * (np.asarray(log_pi, dtype=np.float64) - np.asarray(log_pi_ref, dtype=np.float64))


def preference_carryover(log_odds: LogOdds) -> dict[str, float]:
    """How much of the harness preference survives in the policy's log-odds.

    Least-squares slope of total on harness_preference (1 = fully carried, 0 = erased) and
    their correlation, over every pair in the arrays.
    """
    x = np.ravel(log_odds.harness_preference)
    y = np.ravel(log_odds.total)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(x) < 2 or np.var(x) == 0:
        return {"pairs": float(len(x)), "slope": float("nan"), "correlation": float("nan")}
    slope = float(np.cov(x, y, bias=True)[0, 1] / np.var(x))
    corr = float(np.corrcoef(x, y)[0, 1]) if np.var(y) > 0 else float("nan")
    return {"pairs": float(len(x)), "slope": slope, "correlation": corr}
