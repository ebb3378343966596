"""Observation and reward normalisation with statistics kept per context.

SB3's VecNormalize and cleanrl's procgen script keep one running statistic for all parallel
environments. When contexts differ in return scale that pools incomparable numbers: the
largest-scale context dominates the variance and the others' rewards are squashed. Here the
statistic is chosen by `mode`:

    "none"     no normalisation
    "pooled"   one statistic for every sub-environment (the SB3 / cleanrl behaviour)
    "context"  one statistic per context id

Both normalisers are small numpy objects with `state_dict()` / `load_state_dict()` so a
checkpoint restores them exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MODES = ("none", "pooled", "context")


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown normalisation mode {mode!r}; choose one of {', '.join(MODES)}")


class RunningMoments:
    """Per-group running mean and variance (Chan et al. parallel update). mean/var: (groups, *shape)."""

    def __init__(self, groups: int, shape: tuple[int, ...] = (), eps: float = 1e-4):
        self.mean = np.zeros((groups, *shape), dtype=np.float64)
        self.var = np.ones((groups, *shape), dtype=np.float64)
        self.count = np.full(groups, eps, dtype=np.float64)

    def update(self, x: np.ndarray, group: np.ndarray) -> None:
        """x: (B, *shape); group: (B,) ints. Each group's moments absorb its rows."""
        x = np.asarray(x, dtype=np.float64)
        for g in np.unique(group):
            rows = x[group == g]
            n = len(rows)
            b_mean, b_var = rows.mean(0), rows.var(0)
            delta = b_mean - self.mean[g]
            total = self.count[g] + n
            self.mean[g] = self.mean[g] + delta * n / total
            m2 = self.var[g] * self.count[g] + b_var * n + delta**2 * self.count[g] * n / total
            self.var[g] = m2 / total
            self.count[g] = total

    def state_dict(self) -> dict[str, Any]:
        return {"mean": self.mean.copy(), "var": self.var.copy(), "count": self.count.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.mean[...], self.var[...], self.count[...] = state["mean"], state["var"], state["count"]


class ObsNormalizer:
    """(obs - mean) / sqrt(var + eps), clipped, with statistics per context or pooled."""

    def __init__(self, mode: str, num_contexts: int, shape: tuple[int, ...], clip: float = 10.0, eps: float = 1e-8):
        _check_mode(mode)
        self.mode, self.clip, self.eps = mode, clip, eps
        self.moments = RunningMoments(num_contexts if mode == "context" else 1, shape)

    def _groups(self, context: np.ndarray) -> np.ndarray:
        return context if self.mode == "context" else np.zeros_like(context)

    def __call__(self, obs: np.ndarray, context: np.ndarray, update: bool = True) -> np.ndarray:
        """obs: (B, *shape), context: (B,) -> float32 normalised obs (unchanged when mode is none)."""
        if self.mode == "none":
            return obs.astype(np.float32, copy=False)
        groups = self._groups(context)
        if update:
            self.moments.update(obs, groups)
        out = (obs - self.moments.mean[groups]) / np.sqrt(self.moments.var[groups] + self.eps)
        return np.clip(out, -self.clip, self.clip).astype(np.float32)

    def state_dict(self) -> dict[str, Any]:
        return self.moments.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.moments.load_state_dict(state)


class RewardNormalizer:
    """Scale rewards by the running std of each sub-environment's discounted return (as VecNormalize),
    with that std estimated per context or pooled."""

    def __init__(self, mode: str, num_contexts: int, num_envs: int, gamma: float, clip: float = 10.0, eps: float = 1e-8):
        _check_mode(mode)
        self.mode, self.gamma, self.clip, self.eps = mode, gamma, clip, eps
        self.moments = RunningMoments(num_contexts if mode == "context" else 1)
        self.returns = np.zeros(num_envs, dtype=np.float64)

    def __call__(self, reward: np.ndarray, context: np.ndarray, done: np.ndarray) -> np.ndarray:
        """reward, done: (num_envs,); done = the episode ended at this step. Returns float32 rewards."""
        if self.mode == "none":
            return reward.astype(np.float32, copy=False)
        self.returns = self.returns * self.gamma + reward
        groups = context if self.mode == "context" else np.zeros_like(context)
        self.moments.update(self.returns, groups)
        self.returns[done] = 0.0
        out = reward / np.sqrt(self.moments.var[groups] + self.eps)
        return np.clip(out, -self.clip, self.clip).astype(np.float32)

    def scale(self, context: np.ndarray) -> np.ndarray:
        """The divisor applied to each context's rewards (1 when mode is none): multiply a value
        learned on normalised rewards by it to get back the env's reward units."""
        context = np.asarray(context)
        if self.mode == "none":
            return np.ones(context.shape)
        groups = context if self.mode == "context" else np.zeros_like(context)
        return np.sqrt(self.moments.var[groups] + self.eps)

    def state_dict(self) -> dict[str, Any]:
        return {**self.moments.state_dict(), "returns": self.returns.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.moments.load_state_dict(state)
        self.returns[...] = state["returns"]
