"""Advantage estimators: GAE with masks and time limits, group-relative (GRPO, RLOO), grouping rules.

Shapes: B = samples (sequences, or parallel environments), T = tokens or time steps.
Every estimator is a pure function of tensors registered by name in `ADVANTAGES`; grouping
rules are registered in `GROUPING_RULES`. Formulas: ../shared/ANCHORS.md §2.

- `gae`: delta_t = r_t + gamma V_{t+1} - V_t, A_t = delta_t + gamma lambda A_{t+1}. Masked
  positions (tool output, prompt) are skipped and the recursion carries across them. At a
  step that ends an episode, `terminated` bootstraps from 0 and `truncated` (a time limit)
  from the value of the final observation.
- `grpo`: A_i = (r_i - mean_G r) / (std_G r + eps), scale group | batch | none (none = Dr. GRPO).
- `rloo`: A_i = r_i - mean of the other rewards of its group.
  Every group estimator accepts the same keywords (scale, eps), so a caller passes one keyword
  set whatever the estimator: rloo and dr_grpo accept eps unused (verl's RLOO ignores its epsilon
  too) and only scale="none".
  Singleton groups: a group with one sample, or whose rewards are all equal, carries no signal:
  its advantage is exactly zero and it is counted in the returned `GroupAdvantages`. This
  follows neither library: verl gives a singleton its raw reward (mean 0, std 1) and TRL
  requires num_generations >= 2 (a singleton's std is NaN there).
"""

from __future__ import annotations

import operator

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from harnessrl.rl.masked import check_mask
from harnessrl.rl.registry import Registry

ADVANTAGES: Registry[Callable[..., Any]] = Registry("advantage estimator")
GROUPING_RULES: Registry[Callable[[Any], Hashable]] = Registry("grouping rule")


# ----------------------------------------------------------------------------------------
# GAE


@ADVANTAGES.register("gae")
def gae(
    rewards: Tensor,
    values: Tensor,
    mask: Tensor | None = None,
    *,
    gamma: float = 0.99,
    lam: float = 0.95,
    terminated: Tensor | None = None,
    truncated: Tensor | None = None,
    final_values: Tensor | None = None,
    last_values: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Generalised advantage estimation along the last dim (time).

    rewards, values: (B, T); values[b, t] = V(s_t).
    mask: (B, T) or None; 0 marks steps that are not actions (tool output, prompt). They are
        skipped: the recursion links each action to the next unmasked step, and a reward that
        sits on a masked step is credited to the action before it (undiscounted).
    terminated, truncated: (B, T) bool or None; an episode ends after step t. Both must be on
        unmasked steps.
    final_values: (B, T); V(final observation) read where truncated (time-limit bootstrap).
    last_values: (B,) or None; V of the state after the last step (the rollout was cut
        mid-episode). None = 0, i.e. a sequence ends its episode (the LM case).
    Returns (advantages, returns), both (B, T); 0 at masked positions.
    """
    B, T = rewards.shape
    if values.shape != (B, T):
        raise ValueError(f"values has shape {tuple(values.shape)}, rewards {tuple(rewards.shape)}; they must match")
    mask = check_mask(mask, rewards)
    zeros = torch.zeros(B, T, dtype=torch.bool, device=rewards.device)
    term = zeros if terminated is None else terminated.bool()
    trunc = zeros if truncated is None else truncated.bool() & ~term
    if truncated is not None and truncated.any() and final_values is None:
        raise ValueError("truncated steps need final_values: V(final observation) for the time-limit bootstrap")
    last = torch.zeros(B, dtype=rewards.dtype, device=rewards.device) if last_values is None else last_values
    if mask is None:
        return _gae_dense(rewards, values, term, trunc, final_values, last, gamma, lam)
    ends = term | trunc
    if (ends & (mask == 0)).any():
        raise ValueError("terminated/truncated is set on a masked step; put episode ends on action steps")
    return _gae_masked(rewards, values, mask, term, trunc, final_values, last, gamma, lam)


def _gae_dense(rewards, values, term, trunc, final_values, last, gamma, lam):
    # Every step is an action: next values are a shift, so only the recursion is sequential.
    next_values = torch.cat([values[:, 1:], last[:, None]], dim=1)
    if final_values is not None:
        next_values = torch.where(trunc, final_values, next_values)
    next_values = next_values.masked_fill(term, 0.0)
    deltas = rewards + gamma * next_values - values
    carry = (gamma * lam) * (~(term | trunc)).to(rewards.dtype)
    adv = torch.empty_like(rewards)
    running = torch.zeros_like(last)
    for t in range(rewards.shape[1] - 1, -1, -1):
        running = deltas[:, t] + carry[:, t] * running
        adv[:, t] = running
    return adv, adv + values


def _gae_masked(rewards, values, mask, term, trunc, final_values, last, gamma, lam):
    B, T = rewards.shape
    live = mask.bool()
    adv = torch.zeros_like(rewards)
    next_value, next_adv = last.clone(), torch.zeros_like(last)
    pending = torch.zeros_like(last)  # rewards of masked steps after t, credited to the action at t
    fv = final_values if final_values is not None else torch.zeros_like(rewards)
    for t in range(T - 1, -1, -1):
        m, te, tr = live[:, t], term[:, t], trunc[:, t]
        ended = te | tr
        r = rewards[:, t] + torch.where(ended, 0.0, pending)
        nv = torch.where(te, 0.0, torch.where(tr, fv[:, t], next_value))
        a = r + gamma * nv - values[:, t] + gamma * lam * torch.where(ended, 0.0, next_adv)
        adv[:, t] = torch.where(m, a, 0.0)
        next_adv = torch.where(m, a, next_adv)
        next_value = torch.where(m, values[:, t], next_value)
        pending = torch.where(m, 0.0, r)
    return adv, (adv + values) * mask


# ----------------------------------------------------------------------------------------
# Grouping rules: a sample's context -> the key of its advantage group


def context_field(ctx: Any, name: str, position: int) -> Any:
    """Read task_id/harness_id from a tuple, a mapping, or any object with attributes."""
    if isinstance(ctx, (tuple, list)):  # checked first: the common case, and cheaper than the Mapping ABC
        if position >= len(ctx):
            raise ValueError(f"context {ctx!r} has no {name} (expected (task_id, harness_id))")
        return ctx[position]
    if isinstance(ctx, Mapping):
        return ctx[name]
    if isinstance(ctx, str):
        if position == 0:
            return ctx
        raise ValueError(f"context {ctx!r} is a bare task id; the within rule needs (task_id, harness_id)")
    return getattr(ctx, name)


@GROUPING_RULES.register("within")
def within(ctx: Any) -> Hashable:
    """One group per (task_id, harness_id)."""
    return (context_field(ctx, "task_id", 0), context_field(ctx, "harness_id", 1))


@GROUPING_RULES.register("cross")
def cross(ctx: Any) -> Hashable:
    """One group per task_id: all harnesses of a task pooled."""
    return context_field(ctx, "task_id", 0)


@GROUPING_RULES.register("batch")
def batch(ctx: Any) -> Hashable:
    """The whole batch is one group."""
    return 0


_FAST_KEYS = {within: operator.itemgetter(0, 1), cross: operator.itemgetter(0)}


def _rows(contexts: Sequence[Any] | Mapping[str, Sequence[Any]]) -> Sequence[Any]:
    if isinstance(contexts, Mapping):  # columns {"task_id": [...], "harness_id": [...]}
        names = list(contexts)
        return [dict(zip(names, vals)) for vals in zip(*(contexts[n] for n in names))]
    return contexts


def group_index(
    contexts: Sequence[Any] | Mapping[str, Sequence[Any]],
    rule: str | Callable[[Any], Hashable] = "within",
    device: torch.device | str | None = None,
) -> tuple[Tensor, int]:
    """Map each sample's context to a group id.

    contexts: B per-sample keys — (task_id, harness_id) tuples, mappings with those keys,
        objects with those attributes — or columns {"task_id": [...], "harness_id": [...]}.
    rule: "within" | "cross" | "batch" or a callable context -> hashable key.
    Returns (index (B,) int64 with ids in order of first appearance, number of groups).
    """
    key = GROUPING_RULES.get(rule) if isinstance(rule, str) else rule
    rows = _rows(contexts)
    ids: dict[Hashable, int] = {}
    fast = _FAST_KEYS.get(key)
    if fast is not None and rows and set(map(type, rows)) == {tuple} and min(map(len, rows)) >= 2:
        # (task_id, harness_id) tuples, the trainers' form: keys read in C, same groups as `key`
        index = [ids.setdefault(k, len(ids)) for k in map(fast, rows)]
    else:
        index = [ids.setdefault(key(c), len(ids)) for c in rows]
    # through numpy: torch.tensor(list) converts element by element, about twice as slow at B = 64
    return torch.as_tensor(np.array(index, dtype=np.int64), device=device), len(ids)


# ----------------------------------------------------------------------------------------
# Group-relative advantages


@dataclass(frozen=True)
class GroupAdvantages:
    """Advantages plus the bookkeeping trainers log."""

    advantages: Tensor  # (B,)
    index: Tensor  # (B,) group id of each sample
    num_groups: int
    signal_groups: int  # groups with >= 2 samples and not all rewards equal
    singleton_groups: int
    constant_groups: int  # >= 2 samples, all rewards equal

    @property
    def signal_fraction(self) -> float:
        """Fraction of groups that carry a learning signal."""
        return self.signal_groups / self.num_groups if self.num_groups else 0.0


def _group_stats(rewards: Tensor, index: Tensor, num_groups: int):
    """Per-group count, mean, unbiased std and signal flag. All (G,).

    Empty groups get a NaN mean and singletons a NaN std (0/0): neither is ever read back for a
    sample, since every sample's group has one, and singletons carry no signal (their advantage
    is set to 0). Skipping the clamps saves ops that dominate at trainer batch sizes."""
    if rewards.dim() != 1 or index.shape != rewards.shape:
        raise ValueError(f"rewards and index must both be (B,); got {tuple(rewards.shape)} and {tuple(index.shape)}")
    G = num_groups
    count = torch.bincount(index, minlength=G).to(rewards.dtype)
    mean = torch.bincount(index, weights=rewards, minlength=G).to(rewards.dtype) / count
    centred = rewards - mean[index]
    std = (torch.bincount(index, weights=centred.square(), minlength=G).to(rewards.dtype) / (count - 1)).sqrt()
    # All-equal is tested on max == min, not on std == 0: a mean of equal floats need not be exact.
    # max > min is false for empty groups (-inf > inf) and singletons, so it is the whole signal test.
    signal = torch.full_like(mean, -torch.inf).scatter_reduce_(0, index, rewards, "amax") \
        > torch.full_like(mean, torch.inf).scatter_reduce_(0, index, rewards, "amin")
    return count, centred, std, signal


def _result(adv: Tensor, index: Tensor, count: Tensor, signal: Tensor) -> GroupAdvantages:
    adv = torch.where(signal[index], adv, 0.0)  # where, not a product: a singleton's scaled advantage is NaN (0/0 std)
    # the four counts from two host reads of (G,) vectors: G is small, and ten tiny tensor ops cost more
    counts, signals = count.tolist(), signal.tolist()
    return GroupAdvantages(advantages=adv, index=index, num_groups=sum(c > 0 for c in counts), signal_groups=sum(signals),
                           singleton_groups=sum(c == 1 for c in counts),
                           constant_groups=sum(c >= 2 and not s for c, s in zip(counts, signals)))


def _num_groups(index: Tensor, num_groups: int | None) -> int:
    return int(index.max()) + 1 if num_groups is None and index.numel() else (num_groups or 0)


@ADVANTAGES.register("grpo")
def grpo_advantages(
    rewards: Tensor,
    index: Tensor,
    num_groups: int | None = None,
    *,
    scale: str = "group",
    eps: float = 1e-6,
) -> GroupAdvantages:
    """GRPO: (r_i - mean_G r) / (std_G r + eps).

    rewards: (B,) one scalar per sample (sequence or episode); index: (B,) group ids from
    `group_index` (any order, unequal sizes). scale: "group" (std of the sample's group,
    unbiased as in TRL/verl), "batch" (std of all rewards: TRL scale_rewards="batch") or
    "none" (no division: Dr. GRPO). eps: verl 1e-6, TRL 1e-4.
    """
    G = _num_groups(index, num_groups)
    count, centred, std, signal = _group_stats(rewards, index, G)
    if scale == "group":
        adv = centred / (std[index] + eps)
    elif scale == "batch":
        adv = centred / (rewards.std() + eps) if rewards.numel() > 1 else centred
    elif scale == "none":
        adv = centred
    else:
        raise ValueError(f"unknown GRPO scale {scale!r}; choose group, batch or none")
    return _result(adv, index, count, signal)


@ADVANTAGES.register("dr_grpo")
def dr_grpo_advantages(rewards: Tensor, index: Tensor, num_groups: int | None = None, *, scale: str = "none",
                       eps: float = 1e-6) -> GroupAdvantages:
    """Dr. GRPO: r_i - mean_G r (GRPO without the std division). Shapes as `grpo_advantages`.

    scale must be "none" (the point of Dr. GRPO); eps is accepted and unused."""
    if scale != "none":
        raise ValueError(f"dr_grpo never divides by a std; got scale={scale!r} (use estimator grpo for that)")
    return grpo_advantages(rewards, index, num_groups, scale="none")


@ADVANTAGES.register("rloo")
def rloo_advantages(rewards: Tensor, index: Tensor, num_groups: int | None = None, *, scale: str = "none",
                    eps: float = 1e-6) -> GroupAdvantages:
    """RLOO: r_i - (sum_G r - r_i) / (n_G - 1), the leave-one-out baseline. Shapes as `grpo_advantages`.

    scale must be "none": the leave-one-out advantage is not divided by a std (TRL's and verl's
    RLOO neither); eps is accepted and unused (verl's rloo ignores its epsilon too)."""
    if scale != "none":
        raise ValueError(f"rloo never divides by a std; got scale={scale!r} (use estimator grpo for that)")
    G = _num_groups(index, num_groups)
    count, centred, _, signal = _group_stats(rewards, index, G)
    n = count[index]
    adv = centred * n / (n - 1).clamp(min=1)  # == r_i - mean of the others
    return _result(adv, index, count, signal)


def group_advantages(
    rewards: Tensor,
    contexts: Sequence[Any] | Mapping[str, Sequence[Any]],
    *,
    rule: str | Callable[[Any], Hashable] = "within",
    estimator: str = "grpo",
    **kwargs: Any,
) -> GroupAdvantages:
    """Group the batch by `rule` on each sample's context, then apply the named estimator.

    rewards: (B,); contexts: B per-sample keys (see `group_index`). kwargs: the estimator's
    keywords; every group estimator (grpo, dr_grpo, rloo) takes scale and eps.
    """
    if len(_rows(contexts)) != rewards.shape[0]:
        raise ValueError(f"{rewards.shape[0]} rewards but {len(_rows(contexts))} contexts")
    index, G = group_index(contexts, rule, device=rewards.device)
    return ADVANTAGES.get(estimator)(rewards, index, G, **kwargs)


def to_tokens(advantages: Tensor, mask: Tensor) -> Tensor:
    """Broadcast per-sequence advantages (B,) to tokens (B, T), zero where mask is 0."""
    return advantages[:, None] * mask.to(advantages.dtype)
