"""Evaluation on levels: returns per context / unseen level, Procgen-normalised scores and aggregates.

`evaluate_episodes` plays a policy in a multi-context vector env until every sub-environment
has finished `episodes_per_env` episodes and keeps exactly the first ones of each (stopping
at a fixed count per env avoids over-sampling short episodes). For generalisation, build the
env from unseen test levels (envs.levels.minigrid_test_context, or Procgen with a disjoint
start_level). Aggregates across runs x tasks use IQM with stratified-bootstrap 95% CIs
(evaluate.stats, rliable's protocol).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harnessrl.evaluate.stats import Estimate, iqm, normalized_return, stratified_bootstrap_ci

#: Procgen easy-mode (R_min, R_max), Cobbe et al. 2020.
PROCGEN_EASY = {
    "bigfish": (1.0, 40.0), "bossfight": (0.5, 13.0), "caveflyer": (3.5, 12.0), "chaser": (0.5, 13.0),
    "climber": (2.0, 12.6), "coinrun": (5.0, 10.0), "dodgeball": (1.5, 19.0), "fruitbot": (-1.5, 32.4),
    "heist": (3.5, 10.0), "jumper": (3.0, 10.0), "leaper": (3.0, 10.0), "maze": (5.0, 10.0),
    "miner": (1.5, 13.0), "ninja": (3.5, 10.0), "plunder": (4.5, 30.0), "starpilot": (2.5, 64.0),
}


@dataclass(frozen=True)
class EvalEpisode:
    env: int
    context: int
    level: int  # -1 when the env has no levels
    ret: float
    length: int


def evaluate_episodes(env, act: Callable[[np.ndarray], np.ndarray], episodes_per_env: int, seed: int = 0,
                      max_steps: int = 1_000_000) -> list[EvalEpisode]:
    """Run `act` ((N, *obs), context (N,)) -> actions until each sub-env finished episodes_per_env episodes."""
    obs, _ = env.reset(seed=seed)
    done = np.zeros(env.num_envs, dtype=np.int64)
    out: list[EvalEpisode] = []
    for _ in range(max_steps):
        obs, *_ = env.step(act(obs, env.context))
        for i, ctx, level, ret, length in env.pop_episodes():
            if done[i] < episodes_per_env:
                out.append(EvalEpisode(i, ctx, level, ret, length))
                done[i] += 1
        if (done >= episodes_per_env).all():
            return out
    raise RuntimeError(f"evaluation did not finish {episodes_per_env} episodes per env within {max_steps} steps")


def returns_by_context(episodes: list[EvalEpisode], num_contexts: int) -> np.ndarray:
    """Mean return per context id (NaN where none finished). (K,)"""
    out = np.full(num_contexts, np.nan)
    for k in range(num_contexts):
        rs = [e.ret for e in episodes if e.context == k]
        if rs:
            out[k] = float(np.mean(rs))
    return out


def procgen_normalized(game: str, returns: np.ndarray) -> np.ndarray:
    """(R - R_min) / (R_max - R_min) with the easy-mode constants of `game`."""
    if game not in PROCGEN_EASY:
        raise KeyError(f"unknown Procgen game {game!r}; choose from {', '.join(sorted(PROCGEN_EASY))}")
    return normalized_return(returns, *PROCGEN_EASY[game])


def aggregate_iqm(scores: np.ndarray, seed: int = 0, n_resamples: int = 2000) -> Estimate:
    """IQM over a (runs, tasks) matrix of (normalised) scores with a stratified-bootstrap 95% CI."""
    return stratified_bootstrap_ci(np.asarray(scores, dtype=float), iqm, n_resamples=n_resamples, seed=seed)


def iqm_change(base: np.ndarray, new: np.ndarray, seed: int = 0, n_resamples: int = 2000) -> Estimate:
    """Relative change IQM(new) / IQM(base) - 1 of two (runs, tasks) score matrices, with a 95% CI.

    Stratified bootstrap as in `aggregate_iqm`: runs are resampled within each task, for each
    matrix independently (the two arms' runs are separate trainings, not pairs). NaN when the
    base IQM is not positive: a ratio to a score at or below the normaliser's floor means nothing.
    """
    a, b = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    if a.ndim == 1:
        a, b = a[:, None], b[:, None]
    point_base = float(iqm(a))
    if not point_base > 0:
        return Estimate(float("nan"), float("nan"), float("nan"), a.size + b.size)
    point = float(iqm(b)) / point_base - 1
    rng = np.random.default_rng(seed)

    def resample(s: np.ndarray) -> np.ndarray:  # (n_resamples, runs, tasks)
        idx = rng.integers(0, s.shape[0], size=(n_resamples, *s.shape))
        return np.take_along_axis(s[None].repeat(n_resamples, 0), idx, axis=1)

    denom = np.array([iqm(x) for x in resample(a)])
    numer = np.array([iqm(x) for x in resample(b)])
    with np.errstate(divide="ignore", invalid="ignore"):  # a resampled base at the floor: an unbounded ratio
        ratios = np.where(denom > 0, numer / denom - 1, np.inf)
    return Estimate(point, float(np.quantile(ratios, 0.025, method="inverted_cdf")),
                    float(np.quantile(ratios, 0.975, method="inverted_cdf")), a.size + b.size)
