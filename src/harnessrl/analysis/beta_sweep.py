"""What the exact KL-control solver predicts at each beta of a sweep, from the reference's samples.

Under `max_pi E[R] - beta KL(pi || pi_ref)` over whole trajectories the optimum is the tilt
`pi*(tau) = pi_ref(tau) exp(R(tau)/beta) / Z` (ANCHORS §1). On the N reference samples of one
(task, harness) cell, taken as the empirical pi_ref (each 1/N), that is a bandit over the samples,
solved exactly by `klcontrol.bandit_optimum`; it gives per beta

    predicted score   S*_beta  = sum_i pi*_i R_i
    predicted KL      KL*_beta = sum_i pi*_i log(N pi*_i)      (KL(pi* || pi_ref), nats per episode)
    soft ceiling      V*_beta  = beta log mean exp(R / beta)

A policy that reached the optimum would score S*, sit KL* from the reference and have mismatch 0.

The log-odds the optimum carries on a contrast (a better first action a vs a worse one b) are the
reference's plus the value correction `(Q*(a) - Q*(b)) / beta` (`klcontrol.log_odds_decomposition`),
with the soft value `Q*(x) = beta log E_ref[exp(R/beta) | first action x]` estimated from the
reference episodes whose first action was x (`klcontrol.soft_value`).

Pure: arrays in, rows out. CIs are bootstraps (tasks, then samples within a task; or episodes).
"""

from __future__ import annotations

import numpy as np

from harnessrl.analysis.ceiling import estimate
from harnessrl.analysis.klcontrol import bandit_optimum, soft_value
from harnessrl.analysis.samples import Samples


def tilt_of_samples(returns: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """returns (..., N) of N reference samples -> (S*, KL*, V*), each (...): the exact optimum at beta."""
    R = np.asarray(returns, dtype=np.float64)
    N = R.shape[-1]
    star, v = bandit_optimum(np.full(R.shape, 1.0 / N), R, beta)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(star > 0, star * np.log(star * N), 0.0).sum(-1)
    return (star * R).sum(-1), kl, v


def tilt_prediction(reference: Samples, harnesses: list[str], beta: float, n_boot: int = 1000,
                    seed: int = 0) -> list[dict]:
    """One row per harness: the optimum's score, KL to the reference and soft ceiling at beta, with 95% CIs.

    Tasks are those with reference samples under every harness, weighted equally; replicates
    resample tasks (shared across harnesses) and samples within each cell.
    """
    tasks = sorted(set.intersection(*[set(reference.task[reference.harness == h].tolist()) for h in harnesses]))
    if not tasks:
        raise ValueError(f"no task has reference samples under every harness {harnesses}")
    rng = np.random.default_rng([seed, 7])
    T = len(tasks)
    task_idx = np.vstack([np.arange(T)[None], rng.integers(0, T, size=(n_boot, T))])  # (B+1, T)
    rows = []
    for hi, h in enumerate(harnesses):
        cells = np.empty((3, T, n_boot + 1))
        for ti, t in enumerate(tasks):
            r = reference.reward[(reference.harness == h) & (reference.task == t)]
            crng = np.random.default_rng([seed, 7, hi, ti])
            idx = np.vstack([np.arange(len(r))[None], crng.integers(0, len(r), size=(n_boot, len(r)))])
            cells[:, ti] = np.stack(tilt_of_samples(r[idx], beta))
        level = cells[:, task_idx.T, np.arange(n_boot + 1)].mean(axis=1)  # (3, B+1)
        row: dict = {"harness": h, "beta": beta}
        for name, rep in zip(("pred_score", "pred_kl", "soft_ceiling"), level):
            e = estimate(rep)
            row.update({name: e.value, f"{name}_lo": e.lo, f"{name}_hi": e.hi})
        rows.append(row)
    return rows


def predicted_correction(returns_better: np.ndarray, returns_worse: np.ndarray, beta: float, n_boot: int = 1000,
                         seed: int = 0, min_episodes: int = 5) -> dict:
    """(Q*(a) - Q*(b)) / beta from the returns of reference episodes that began with a and with b.

    Q*(x) = beta log mean exp(R/beta) over those episodes (a Monte Carlo soft value). NaN when
    either action began fewer than `min_episodes` episodes: the soft value of one or two episodes
    is not an estimate (and at small beta it is +-1/beta from a single success or failure).
    CI: a bootstrap of the episodes of each action.
    """
    a, b = np.asarray(returns_better, dtype=np.float64), np.asarray(returns_worse, dtype=np.float64)
    out = {"episodes_better": int(a.size), "episodes_worse": int(b.size)}
    if min(a.size, b.size) < max(1, min_episodes):
        return {**out, "pred_correction": float("nan"), "pred_correction_lo": float("nan"),
                "pred_correction_hi": float("nan")}
    rng = np.random.default_rng([seed, 11])
    ia = np.vstack([np.arange(a.size)[None], rng.integers(0, a.size, size=(n_boot, a.size))])
    ib = np.vstack([np.arange(b.size)[None], rng.integers(0, b.size, size=(n_boot, b.size))])
    rep = (soft_value(a[ia], beta) - soft_value(b[ib], beta)) / beta
    e = estimate(rep)
    return {**out, "pred_correction": e.value, "pred_correction_lo": e.lo, "pred_correction_hi": e.hi}
