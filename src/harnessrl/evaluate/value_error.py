"""Per-context value error: the critic's prediction against the Monte-Carlo return, context by context.

A shared critic facing contexts with different returns for the same state predicts their
average, so its error is large exactly where contexts conflict; a conditioned critic's is
not. This module measures that on fresh episodes, independently of the training loss.

Monte-Carlo targets: G_t = sum_k gamma^k r_{t+k} to the end of the episode. A step counts
when its episode terminated inside the recorded window, or when the part of the return the
window cut off weighs at most `tail_tol` (gamma^(steps left) <= tail_tol) — time-limit
truncation does not end a state's value, so the last steps before one are left out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


def mc_returns(rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray, gamma: float,
               tail_tol: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Discounted returns to episode end and which steps they are valid for.

    rewards, terminated, truncated: (T, N) along time for N sub-environments (same-step
    autoreset: the step that ends an episode carries its flag). Returns (returns, valid), (T, N).
    """
    T, N = rewards.shape
    returns = np.zeros((T, N), dtype=np.float64)
    valid = np.zeros((T, N), dtype=bool)
    horizon = math.inf if gamma >= 1 else (0.0 if gamma == 0 else math.log(tail_tol) / math.log(gamma))
    running = np.zeros(N)
    exact = np.zeros(N, dtype=bool)  # t's episode terminated inside the window: G_t is exact
    left = np.zeros(N)  # G_t misses a tail weighted gamma^left (cut by truncation or the window's end)
    for t in range(T - 1, -1, -1):
        ended = terminated[t] | truncated[t]
        running = rewards[t] + gamma * np.where(ended, 0.0, running)
        exact = np.where(ended, terminated[t], exact)
        left = np.where(ended, 1.0, left + 1.0)
        returns[t] = running
        valid[t] = exact | (left >= horizon)
    return returns, valid


IMAGE_CHUNK = 2048  # rows per value call for image observations


@dataclass(frozen=True)
class ValueErrorReport:
    """Per-context value error. mse, bias (mean of V - G), count: (K,)."""

    mse: np.ndarray
    bias: np.ndarray
    count: np.ndarray
    names: tuple[str, ...] = ()

    def as_rows(self) -> list[dict]:
        return [{"context": self.names[k] if self.names else k, "mse": float(self.mse[k]), "bias": float(self.bias[k]),
                 "count": int(self.count[k])} for k in range(len(self.mse))]


def value_error_by_context(values: np.ndarray, returns: np.ndarray, valid: np.ndarray, context: np.ndarray,
                           num_contexts: int, names: tuple[str, ...] = ()) -> ValueErrorReport:
    """MSE and bias of values against returns where valid, per context. values, returns, valid: (T, N) or (B,);
    context: (N,) per sub-environment or the same shape as values."""
    ctx = np.broadcast_to(context, values.shape)[valid]
    err = (values - returns)[valid]
    count = np.bincount(ctx, minlength=num_contexts).astype(np.int64)
    sq = np.bincount(ctx, weights=err**2, minlength=num_contexts)
    bias = np.bincount(ctx, weights=err, minlength=num_contexts)
    with np.errstate(invalid="ignore", divide="ignore"):
        mse = np.where(count > 0, sq / np.maximum(count, 1), np.nan)
        mean_bias = np.where(count > 0, bias / np.maximum(count, 1), np.nan)
    return ValueErrorReport(mse, mean_bias, count, tuple(names))


def measure_value_error(env, act: Callable[[np.ndarray], np.ndarray], value: Callable[[np.ndarray, np.ndarray], np.ndarray],
                        steps: int, gamma: float, seed: int = 0, tail_tol: float = 0.05,
                        truncation_is_terminal: bool = False) -> ValueErrorReport:
    """Roll out `act` for `steps` steps per sub-environment of a multi-context `env`, then compare
    `value(obs, context)` with Monte-Carlo returns, per context.

    act: ((N, *obs), context (N,)) -> (N, ...) actions; value: ((B, *obs), (B,)) -> (B,) predictions.
    truncation_is_terminal: the env's time limit is part of the task (the critic was trained without
    bootstrapping at truncation, e.g. MiniGrid, whose reward depends on the step budget).
    """
    N = env.num_envs
    obs, _ = env.reset(seed=seed)
    image = obs.dtype == np.uint8  # images stay uint8 (a quarter of float32: Procgen's 256 x 64 frames are 0.2 GB)
    obs_buf = np.zeros((steps, *obs.shape), dtype=np.uint8 if image else np.float32)
    rew = np.zeros((steps, N))
    term = np.zeros((steps, N), dtype=bool)
    trunc = np.zeros((steps, N), dtype=bool)
    for t in range(steps):
        obs_buf[t] = obs
        obs, rew[t], term[t], trunc[t], _ = env.step(act(obs, env.context))
    env.pop_episodes()
    ctx = np.asarray(env.context)
    flat, flat_ctx = obs_buf.reshape(steps * N, *obs.shape[1:]), np.tile(ctx, steps)
    chunk = IMAGE_CHUNK if image else len(flat)  # an image trunk over all rows at once would hold GBs of activations
    values = np.concatenate([value(flat[i:i + chunk], flat_ctx[i:i + chunk])
                             for i in range(0, len(flat), chunk)]).reshape(steps, N)
    if truncation_is_terminal:
        term, trunc = term | trunc, np.zeros_like(trunc)
    returns, valid = mc_returns(rew, term, trunc, gamma, tail_tol)
    return value_error_by_context(values, returns, valid, ctx, env.num_contexts, tuple(env.context_names))
