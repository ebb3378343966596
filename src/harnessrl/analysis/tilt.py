"""The tilt model: how outcome frequencies move when a policy is optimised against a reward.

The KL-regularised optimum of `E[r] - beta KL(pi || pi0)` is `pi*(y) ∝ pi0(y) exp(r(y)/beta)`
(ANCHORS §1). Summing over the trajectories y with outcome o gives the predicted frequency

    p_beta(o) ∝ sum_{y: o(y) = o} pi0(y) exp(r(y)/beta)

estimated from base-policy samples (pi0(y) = 1/N for Monte Carlo samples, or exact
probabilities via `log_weights`). Outcomes whose samples the reward likes grow — including
wrong ones a learned reward gives credit to. Gating the reward by an outcome verifier,
`r' = r * 1[verifier accepts]`, sends rejected outcomes back to their base weight.

Contexts (task / layout ids) are tilted separately — the optimum normalises per start
state — and mixed by their share of the samples.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp
from scipy.stats import binomtest

from harnessrl.evaluate.stats import Estimate


def outcome_labels(outcomes: np.ndarray) -> list[str]:
    return sorted(set(np.asarray(outcomes, dtype=object).tolist()))


def _one_hot(outcomes: np.ndarray, labels: list[str]) -> np.ndarray:
    o = np.asarray(outcomes, dtype=object)
    unknown = set(o.tolist()) - set(labels)
    if unknown:
        raise ValueError(f"outcomes {sorted(unknown)} are not among labels {labels}")
    return (o[:, None] == np.asarray(labels, dtype=object)[None, :]).astype(np.float64)  # (N, L)


def _groups(n: int, contexts: np.ndarray | None) -> list[np.ndarray]:
    if contexts is None:
        return [np.arange(n)]
    c = np.asarray(contexts)
    if len(c) != n:
        raise ValueError(f"contexts has {len(c)} entries for {n} samples")
    return [np.flatnonzero(c == v) for v in sorted(set(c.tolist()))]


def _tilted(onehot: np.ndarray, rewards: np.ndarray, log_w: np.ndarray, beta: float) -> np.ndarray:
    """(..., n, L), (..., n), (..., n) -> (..., L): one context's tilted outcome distribution."""
    logits = log_w if math.isinf(beta) else log_w + rewards / beta
    w = np.exp(logits - logsumexp(logits, axis=-1, keepdims=True))
    return np.einsum("...n,...nl->...l", w, onehot)


def tilt(
    outcomes: np.ndarray,
    rewards: np.ndarray,
    beta: float,
    *,
    labels: list[str] | None = None,
    contexts: np.ndarray | None = None,
    log_weights: np.ndarray | None = None,
) -> np.ndarray:
    """Predicted outcome frequencies p_beta(o), aligned with `labels`: shape (L,).

    beta = inf returns the base frequencies. log_weights: log pi0(y) of each (distinct)
    sample for exact enumeration; None for samples drawn from pi0.
    """
    if not beta > 0:
        raise ValueError(f"beta must be > 0 (use math.inf for the base policy); got {beta}")
    labels = labels or outcome_labels(outcomes)
    onehot = _one_hot(outcomes, labels)
    r = np.asarray(rewards, dtype=np.float64)
    lw = np.zeros(len(r)) if log_weights is None else np.asarray(log_weights, dtype=np.float64)
    groups = _groups(len(r), contexts)
    share = np.array([len(g) for g in groups], dtype=np.float64) / len(r)
    return sum(s * _tilted(onehot[g], r[g], lw[g], beta) for s, g in zip(share, groups))


def first_order_tilt(outcomes: np.ndarray, rewards: np.ndarray, beta: float, *, labels: list[str] | None = None) -> np.ndarray:
    """log p'(o) - log p(o) ≈ (E[r | o] - E[r]) / beta, renormalised: the small-step picture."""
    labels = labels or outcome_labels(outcomes)
    onehot = _one_hot(outcomes, labels)
    r = np.asarray(rewards, dtype=np.float64)
    count = onehot.sum(0)
    base = count / len(r)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_r = np.where(count > 0, onehot.T @ r / count, 0.0)
    p = base * np.exp((mean_r - r.mean()) / beta)
    return p / p.sum()


def gate(rewards: np.ndarray, accepted: np.ndarray) -> np.ndarray:
    """r' = r * 1[verifier accepts]."""
    return np.asarray(rewards, dtype=np.float64) * np.asarray(accepted, dtype=bool)


def reward_by_outcome(outcomes: np.ndarray, rewards: np.ndarray, labels: list[str] | None = None) -> list[dict]:
    """E[r | o], its spread and the count: the quantity the tilt model turns into growth."""
    labels = labels or outcome_labels(outcomes)
    o = np.asarray(outcomes, dtype=object)
    r = np.asarray(rewards, dtype=np.float64)
    rows = []
    for lab in labels:
        x = r[o == lab]
        rows.append({"outcome": lab, "n": int(len(x)), "mean_reward": float(x.mean()) if len(x) else float("nan"),
                     "std_reward": float(x.std()) if len(x) else float("nan")})
    return rows


# ----------------------------------------------------------------------------------------
# Uncertainty: observed frequencies (Wilson) and predicted ones (bootstrap of base samples)


def observed_frequencies(outcomes: np.ndarray, labels: list[str], confidence: float = 0.95) -> list[Estimate]:
    o = np.asarray(outcomes, dtype=object)
    n = len(o)
    out = []
    for lab in labels:
        c = int((o == lab).sum())
        ci = binomtest(c, n).proportion_ci(confidence_level=confidence, method="wilson") if n else None
        out.append(Estimate(c / n if n else float("nan"), ci.low if ci else float("nan"), ci.high if ci else float("nan"), n))
    return out


def predicted_frequencies(
    outcomes: np.ndarray,
    rewards: np.ndarray,
    beta: float,
    labels: list[str],
    *,
    contexts: np.ndarray | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> list[Estimate]:
    """p_beta(o) with a bootstrap CI (base samples resampled within each context)."""
    onehot = _one_hot(outcomes, labels)
    r = np.asarray(rewards, dtype=np.float64)
    groups = _groups(len(r), contexts)
    rng = np.random.default_rng(seed)
    total = np.zeros((n_boot + 1, len(labels)))
    for g in groups:
        idx = np.vstack([np.arange(len(g))[None], rng.integers(0, len(g), size=(n_boot, len(g)))])
        sel = g[idx]  # (B+1, n_c)
        total += len(g) / len(r) * _tilted(onehot[sel], r[sel], np.zeros(sel.shape), beta)
    a = (1 - confidence) / 2
    return [
        Estimate(float(total[0, j]), float(np.quantile(total[1:, j], a)), float(np.quantile(total[1:, j], 1 - a)), len(r))
        for j in range(len(labels))
    ]


def fit_beta(
    outcomes: np.ndarray,
    rewards: np.ndarray,
    observed: np.ndarray,
    labels: list[str],
    *,
    contexts: np.ndarray | None = None,
    bounds: tuple[float, float] = (1e-3, 1e3),
) -> float:
    """The beta whose tilt best explains observed frequencies: argmin KL(observed || p_beta)."""
    q = np.asarray(observed, dtype=np.float64)

    def loss(log_beta: float) -> float:
        p = np.clip(tilt(outcomes, rewards, float(np.exp(log_beta)), labels=labels, contexts=contexts), 1e-12, 1)
        return float(np.sum(np.where(q > 0, q * (np.log(np.clip(q, 1e-12, 1)) - np.log(p)), 0.0)))

    res = minimize_scalar(loss, bounds=(np.log(bounds[0]), np.log(bounds[1])), method="bounded")
    return float(np.exp(res.x))


def tilt_table(
    outcomes: np.ndarray,
    rewards: np.ndarray,
    betas: list[float],
    *,
    labels: list[str] | None = None,
    contexts: np.ndarray | None = None,
    accepted: np.ndarray | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> list[dict]:
    """Predicted frequencies per beta and outcome, with and (if `accepted`) without the verifier."""
    labels = labels or outcome_labels(outcomes)
    base = observed_frequencies(outcomes, labels)
    variants = [("reward", np.asarray(rewards, dtype=np.float64))]
    if accepted is not None:
        variants.append(("verifier-gated", gate(rewards, accepted)))
    rows = []
    for name, r in variants:
        for beta in betas:
            pred = predicted_frequencies(outcomes, r, beta, labels, contexts=contexts, n_boot=n_boot, seed=seed)
            for lab, b, p in zip(labels, base, pred):
                rows.append({"reward": name, "beta": beta, "outcome": lab, "base": b.value,
                             "predicted": p.value, "predicted_lo": p.lo, "predicted_hi": p.hi})
    return rows
