"""Ceiling, score, headroom and mismatch per harness from records, with bootstrap CIs (ANCHORS §1).

For each harness h and task t, from the reference policy's samples (pi_ref^h) and the
evaluated policy's samples (pi):

    hard ceiling  C_h   = E[max of k returns under pi_ref]      (= unbiased pass@k for 0/1 rewards)
    soft ceiling  V*_h  = beta log mean exp(R/beta)             (KL-regularised optimum's value)
    score         S_h   = mean return of pi                      (pass@1 for 0/1 rewards)
    headroom      G_h   = C_h - S_h
    KL to ref     K_h   = mean (log pi - log pi_ref)             (needs stored log-probs)
    objective     J_h   = S_h - beta K_h
    mismatch      M_h   = KL(pi || pi*_h) = (V*_h - J_h) / beta  (the identity J = V* - beta M)

Harness values average tasks with equal weight over the tasks every harness has reference
samples for. CIs are a two-level bootstrap: tasks resampled (shared across harnesses, so
cross-harness differences are paired), then episodes within each (task, harness) cell.
Replicate 0 of every array is the point estimate (no resampling).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammaln, logsumexp

from harnessrl.analysis.samples import Samples
from harnessrl.evaluate.stats import Estimate

QUANTITIES = ("hard_ceiling", "soft_ceiling", "score", "headroom", "soft_gap", "kl_ref", "objective", "mismatch")

# ----------------------------------------------------------------------------------------
# Per-cell estimators (vectorised over bootstrap replicates on the leading axis)


def expected_max_weights(n: int, k: int) -> np.ndarray:
    """w_i = C(i-1, k-1) / C(n, k) for the ascending order statistics i = 1..n.

    sum_i w_i x_(i) is the unbiased estimator of E[max of k draws] (a U-statistic); for 0/1
    values it is exactly Chen et al.'s pass@k.
    """
    if not 1 <= k <= n:
        raise ValueError(f"expected max@k needs 1 <= k <= n; got k={k}, n={n}")
    i = np.arange(1, n + 1)
    log_w = np.full(n, -np.inf)
    ok = i >= k
    log_w[ok] = gammaln(i[ok]) - gammaln(k) - gammaln(i[ok] - k + 1) - (gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1))
    return np.exp(log_w)


def expected_max_at_k(values: np.ndarray, k: int) -> np.ndarray:
    """values (..., n) -> (...): unbiased E[max of k] per row."""
    x = np.sort(np.asarray(values, dtype=np.float64), axis=-1)
    return x @ expected_max_weights(x.shape[-1], k)


def log_mean_exp_value(values: np.ndarray, beta: float) -> np.ndarray:
    """values (..., n) -> beta log mean exp(values / beta); beta = 0 gives the max."""
    x = np.asarray(values, dtype=np.float64)
    if beta == 0:
        return x.max(-1)
    return beta * (logsumexp(x / beta, axis=-1) - np.log(x.shape[-1]))


# ----------------------------------------------------------------------------------------
# Replicates for a (harness x task) grid


@dataclass
class Grid:
    """Per-cell replicate arrays, shape (H, T, B+1), and the shared task resampling (B+1, T)."""

    harnesses: list[str]
    tasks: list[str]
    beta: float
    k: int
    task_index: np.ndarray
    cells: dict[str, np.ndarray] = field(default_factory=dict)
    counts: dict[str, np.ndarray] = field(default_factory=dict)  # role -> (H, T) episodes

    def harness_level(self, name: str) -> np.ndarray:
        """(H, B+1): task mean per replicate, tasks resampled by task_index."""
        x = self.cells[name]  # (H, T, B+1)
        b = np.arange(x.shape[2])
        return x[:, self.task_index.T, b].mean(axis=1)  # (H, T, B+1) gathered -> mean over T


def _resampled(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n, ...) -> (B+1, n, ...); row 0 is the sample itself."""
    n = len(values)
    idx = np.vstack([np.arange(n)[None], rng.integers(0, n, size=(n_boot, n))])
    return values[idx]


def _cell_rng(seed: int, role: int, h: int, t: int) -> np.random.Generator:
    return np.random.default_rng([seed, role, h, t])


def build_grid(
    reference: Samples,
    policy: Samples | None = None,
    *,
    beta: float = 0.1,
    k: int | None = None,
    harnesses: list[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    extra: dict[str, Samples] | None = None,
) -> Grid:
    """Estimate every per-cell quantity with bootstrap replicates.

    reference: pi_ref^h samples per (task, harness). policy: the evaluated policy (default:
    the reference itself, scored as pass@1). extra: more policies by role name (e.g. "after"
    for gain prediction); each gets `score_<role>` and `kl_ref_<role>` cells.
    k: the k of the hard ceiling (default: the smallest number of reference samples in a cell).
    """
    if beta < 0:
        raise ValueError(f"beta must be >= 0; got {beta}")
    if len(reference) == 0:
        raise ValueError("no reference samples: check the reference policy id / filter")
    harnesses = harnesses or reference.values("harness")
    missing = [h for h in harnesses if h not in set(reference.harness.tolist())]
    if missing:
        raise ValueError(f"no reference samples for harness(es) {missing}; harnesses with samples: {reference.values('harness')}")
    task_sets = [set(reference.task[reference.harness == h].tolist()) for h in harnesses]
    tasks = sorted(set.intersection(*task_sets))
    if not tasks:
        raise ValueError(f"no task has reference samples under every harness {harnesses}")
    H, T = len(harnesses), len(tasks)
    ref_cells = [[reference.reward[(reference.harness == h) & (reference.task == t)] for t in tasks] for h in harnesses]
    n_ref = np.array([[len(c) for c in row] for row in ref_cells])
    k = int(k or n_ref.min())
    if k > n_ref.min():
        hi, ti = np.unravel_index(n_ref.argmin(), n_ref.shape)
        raise ValueError(
            f"k={k} exceeds the {n_ref.min()} reference samples of task {tasks[ti]!r} under harness "
            f"{harnesses[hi]!r}; pass a smaller --k or collect more samples"
        )
    rng = np.random.default_rng([seed, 99])
    task_index = np.vstack([np.arange(T)[None], rng.integers(0, T, size=(n_boot, T))])
    grid = Grid(harnesses, tasks, float(beta), k, task_index)

    hard = np.empty((H, T, n_boot + 1))
    soft = np.empty((H, T, n_boot + 1))
    for hi in range(H):
        for ti in range(T):
            r = _resampled(ref_cells[hi][ti], n_boot, _cell_rng(seed, 0, hi, ti))
            hard[hi, ti] = expected_max_at_k(r, k)
            soft[hi, ti] = log_mean_exp_value(r, beta)
    grid.cells.update(hard_ceiling=hard, soft_ceiling=soft)
    grid.counts["reference"] = n_ref

    roles = {"": reference if policy is None else policy, **{f"_{name}": s for name, s in (extra or {}).items()}}
    for ri, (suffix, pol) in enumerate(roles.items()):
        same = pol is reference  # the reference scored against itself: pair the resamples
        score = np.full((H, T, n_boot + 1), np.nan)
        kl = np.full((H, T, n_boot + 1), np.nan)
        n_pol = np.zeros((H, T), dtype=int)
        for hi, h in enumerate(harnesses):
            for ti, t in enumerate(tasks):
                m = (pol.harness == h) & (pol.task == t)
                n_pol[hi, ti] = m.sum()
                if not m.any():
                    continue
                cols = np.stack([pol.reward[m], pol.logprob[m] - pol.ref_logprob[m]], axis=1)
                r = _resampled(cols, n_boot, _cell_rng(seed, 0 if same else ri + 1, hi, ti))
                score[hi, ti] = r[..., 0].mean(-1)
                if np.isfinite(cols[:, 1]).all():
                    kl[hi, ti] = r[..., 1].mean(-1)
        grid.cells[f"score{suffix}"] = score
        grid.cells[f"kl_ref{suffix}"] = kl
        grid.counts[f"policy{suffix}"] = n_pol
        if same:  # pi = pi_ref exactly: KL(pi || pi_ref) = 0 even without stored log-probs
            kl[np.isnan(kl) & np.isfinite(score)] = 0.0

    grid.cells["headroom"] = hard - grid.cells["score"]
    grid.cells["soft_gap"] = soft - grid.cells["score"]
    grid.cells["objective"] = grid.cells["score"] - beta * grid.cells["kl_ref"]
    with np.errstate(divide="ignore", invalid="ignore"):
        grid.cells["mismatch"] = (soft - grid.cells["objective"]) / beta if beta > 0 else np.full_like(soft, np.nan)
    return grid


# ----------------------------------------------------------------------------------------
# Tables


def estimate(replicates: np.ndarray, confidence: float = 0.95) -> Estimate:
    """Replicate 0 is the point; the percentile interval comes from the rest."""
    rep = np.asarray(replicates, dtype=np.float64)
    if not np.isfinite(rep[0]):
        return Estimate(float("nan"), float("nan"), float("nan"), len(rep) - 1)
    a = (1 - confidence) / 2
    boot = rep[1:][np.isfinite(rep[1:])]
    if boot.size == 0:
        return Estimate(float(rep[0]), float(rep[0]), float(rep[0]), 0)
    return Estimate(float(rep[0]), float(np.quantile(boot, a)), float(np.quantile(boot, 1 - a)), len(rep) - 1)


def cell_table(grid: Grid) -> list[dict]:
    """Point estimates per (task, harness): the hard ceiling per task and harness, and the rest."""
    rows = []
    for hi, h in enumerate(grid.harnesses):
        for ti, t in enumerate(grid.tasks):
            row = {"harness": h, "task": t, "n_ref": int(grid.counts["reference"][hi, ti]), "n_policy": int(grid.counts["policy"][hi, ti])}
            row.update({q: float(grid.cells[q][hi, ti, 0]) for q in QUANTITIES})
            rows.append(row)
    return rows


def harness_table(grid: Grid, confidence: float = 0.95) -> list[dict]:
    """One row per harness: each quantity as value, lo, hi."""
    levels = {q: grid.harness_level(q) for q in QUANTITIES}
    rows = []
    for hi, h in enumerate(grid.harnesses):
        row: dict = {"harness": h, "tasks": len(grid.tasks), "beta": grid.beta, "k": grid.k}
        for q in QUANTITIES:
            e = estimate(levels[q][hi], confidence)
            row.update({q: e.value, f"{q}_lo": e.lo, f"{q}_hi": e.hi})
        rows.append(row)
    return rows


def decomposition(grid: Grid, base: str, other: str, confidence: float = 0.95) -> list[dict]:
    """The score difference other - base split into ceiling change minus headroom change.

    `S2 - S1 = (C2 - C1) - (G2 - G1)` holds in every replicate; with beta:
    `J2 - J1 = (V*2 - V*1) - beta (M2 - M1)`. Rows: term, value, lo, hi.
    """
    i, j = grid.harnesses.index(base), grid.harnesses.index(other)
    diff = {q: grid.harness_level(q)[j] - grid.harness_level(q)[i] for q in QUANTITIES}
    terms = [
        ("score change  dS", diff["score"]),
        ("ceiling change  dC", diff["hard_ceiling"]),
        ("headroom change  dG", diff["headroom"]),
        ("objective change  dJ", diff["objective"]),
        ("soft ceiling change  dV*", diff["soft_ceiling"]),
        ("beta x mismatch change  beta dM", grid.beta * diff["mismatch"]),
    ]
    rows = []
    for name, rep in terms:
        e = estimate(rep, confidence)
        rows.append({"from": base, "to": other, "term": name, "value": e.value, "lo": e.lo, "hi": e.hi})
    return rows


# ----------------------------------------------------------------------------------------
# Gain prediction: dS ~ kappa (C - S), fitted across harnesses, validated on held-out ones


def fit_kappa(gain: np.ndarray, headroom: np.ndarray) -> np.ndarray:
    """Least squares through the origin over harnesses (axis 0): sum dS G / sum G^2."""
    den = (headroom**2).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (gain * headroom).sum(0) / den, np.nan)


@dataclass
class GainPrediction:
    kappa: Estimate
    fit_on: list[str]
    rows: list[dict]  # one per held-out harness: predicted and observed gain with CIs


def gain_prediction(
    reference: Samples,
    before: Samples,
    after: Samples,
    *,
    holdout: list[str],
    harnesses: list[str] | None = None,
    k: int | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> GainPrediction:
    """Fit kappa on every harness not held out; predict the held-out harnesses' gains.

    before / after: the policy's samples before and after one round of further training in
    each harness. The ceiling is the hard one (pass@k of the reference samples).
    """
    grid = build_grid(reference, before, beta=0.0, k=k, harnesses=harnesses, n_boot=n_boot, seed=seed, extra={"after": after})
    unknown = [h for h in holdout if h not in grid.harnesses]
    if unknown:
        raise ValueError(f"held-out harness(es) {unknown} not among {grid.harnesses}")
    fit_idx = [i for i, h in enumerate(grid.harnesses) if h not in holdout]
    if not fit_idx:
        raise ValueError("gain prediction needs at least one harness to fit kappa on (not held out)")
    G = grid.harness_level("headroom")  # (H, B+1)
    dS = grid.harness_level("score_after") - grid.harness_level("score")
    kappa = fit_kappa(dS[fit_idx], G[fit_idx])  # (B+1,)
    rows = []
    for h in holdout:
        i = grid.harnesses.index(h)
        pred, obs = kappa * G[i], dS[i]
        p, o, err = estimate(pred, confidence), estimate(obs, confidence), estimate(obs - pred, confidence)
        rows.append(
            {
                "harness": h,
                "headroom": float(G[i, 0]),
                "predicted_gain": p.value, "predicted_lo": p.lo, "predicted_hi": p.hi,
                "observed_gain": o.value, "observed_lo": o.lo, "observed_hi": o.hi,
                "error": err.value, "error_lo": err.lo, "error_hi": err.hi,
            }
        )
    return GainPrediction(estimate(kappa, confidence), [grid.harnesses[i] for i in fit_idx], rows)
