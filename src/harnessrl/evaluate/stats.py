"""Statistics every evaluation and analysis reports: bootstrap CIs, IQM, unbiased pass@k.

Conventions follow the anchors: IQM is the 25%-trimmed mean over runs x tasks with a
stratified bootstrap (runs resampled within each task, as rliable does); pass@k is the
unbiased estimator of Chen et al. 2021, `1 - C(n-c, k) / C(n, k)`, averaged over tasks.
All functions take numpy arrays and return floats or small tuples; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps


@dataclass(frozen=True, slots=True)
class Estimate:
    """A point estimate with a confidence interval."""

    value: float
    lo: float
    hi: float
    n: int = 0

    def __str__(self) -> str:
        return f"{self.value:.3f} [{self.lo:.3f}, {self.hi:.3f}]"

    def as_dict(self, prefix: str = "") -> dict[str, float]:
        return {f"{prefix}value": self.value, f"{prefix}lo": self.lo, f"{prefix}hi": self.hi, f"{prefix}n": self.n}


def iqm(x: np.ndarray, axis: int | None = None) -> float | np.ndarray:
    """Interquartile mean: the mean of the middle 50% (25% trimmed from each end)."""
    x = np.asarray(x, dtype=float)
    if axis is None:
        x = x.ravel()
        axis = 0
    return sps.trim_mean(x, 0.25, axis=axis)


def bootstrap_ci(
    values: np.ndarray,
    statistic: Callable[[np.ndarray], float] = np.mean,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Estimate:
    """Percentile bootstrap CI of `statistic` over a 1-D sample (scipy.stats.bootstrap).

    Degenerate samples (one value, or all equal) get a zero-width interval instead of NaN.
    """
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    point = float(statistic(x))
    if x.size == 1 or np.all(x == x[0]):
        return Estimate(point, point, point, int(x.size))
    res = sps.bootstrap(
        (x,),
        lambda s, axis=-1: np.apply_along_axis(statistic, axis, s),
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
        vectorized=True,
    )
    return Estimate(point, float(res.confidence_interval.low), float(res.confidence_interval.high), int(x.size))


def stratified_bootstrap_ci(
    scores: np.ndarray,
    statistic: Callable[[np.ndarray], float] = iqm,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Estimate:
    """CI of an aggregate over a (runs, tasks) score matrix, resampling runs within each task.

    This is rliable's stratified bootstrap: each task keeps its own set of runs, so tasks with
    different scales never mix in a resample.
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim == 1:
        s = s[:, None]
    runs, tasks = s.shape
    point = float(statistic(s))
    if runs == 1:
        return Estimate(point, point, point, s.size)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, runs, size=(n_resamples, runs, tasks))
    resampled = np.take_along_axis(s[None, :, :].repeat(n_resamples, 0), idx, axis=1)
    stats = np.array([statistic(r) for r in resampled])
    alpha = (1 - confidence) / 2
    return Estimate(point, float(np.quantile(stats, alpha)), float(np.quantile(stats, 1 - alpha)), s.size)


def pass_at_k(n: int | np.ndarray, c: int | np.ndarray, k: int) -> float | np.ndarray:
    """Unbiased pass@k for a task with n samples of which c passed (Chen et al. 2021).

    Computed as `1 - prod_{i=n-c+1}^{n} (1 - k/i)`, which is exact and never overflows.
    n, c: scalars or arrays of the same shape; requires k <= n.
    """
    n_arr, c_arr = np.broadcast_arrays(np.asarray(n), np.asarray(c))
    if np.any(k > n_arr):
        raise ValueError(f"pass@k needs k <= n samples per task; got k={k}, min n={int(n_arr.min())}")
    if np.any(c_arr > n_arr) or np.any(c_arr < 0):
        raise ValueError("pass@k needs 0 <= c <= n")
    out = np.empty(n_arr.shape, dtype=float)
    for pos, (ni, ci) in enumerate(zip(n_arr.ravel(), c_arr.ravel())):
        if ni - ci < k:
            out.flat[pos] = 1.0
        else:
            i = np.arange(ni - ci + 1, ni + 1, dtype=float)
            out.flat[pos] = 1.0 - np.prod(1.0 - k / i)
    return float(out) if out.ndim == 0 else out


def pass_at_k_ci(n: np.ndarray, c: np.ndarray, k: int, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> Estimate:
    """Mean unbiased pass@k over tasks with a bootstrap CI over tasks."""
    per_task = np.atleast_1d(pass_at_k(np.asarray(n), np.asarray(c), k))
    return bootstrap_ci(per_task, np.mean, confidence, n_resamples, seed)


def binary_signal_fraction(p: float | np.ndarray, n: int) -> float | np.ndarray:
    """Probability that a group of n Bernoulli(p) rewards is not all equal: 1 - (1-p)^n - p^n."""
    p = np.asarray(p, dtype=float)
    return 1 - (1 - p) ** n - p**n


def normalized_return(r: np.ndarray, r_min: float, r_max: float) -> np.ndarray:
    """(R - R_min) / (R_max - R_min), as Procgen's easy-mode normalisation."""
    return (np.asarray(r, dtype=float) - r_min) / (r_max - r_min)
