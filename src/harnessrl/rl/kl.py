"""KL to a reference policy as pure tensor functions: the estimators k1, k2, k3 (Schulman) with
verl's clamps, as a loss term or folded into per-token rewards.

Shapes: log_prob, ref_log_prob, mask: (B, T). Registry (names as in verl):
  KL_ESTIMATORS  k1 (kl) | k2 (mse) | k3 (low_var_kl)
k3 follows verl: x = log pi - log pi_ref is clamped to [-20, 20] and k3 to [-10, 10]. TRL's
GRPOTrainer computes the same k3 (its beta term) without either clamp; the two agree wherever
|x| < ~2.3 (k3 < 10), i.e. for any reference the policy has not run far from.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from harnessrl.rl.losses import LossOutput, aggregate
from harnessrl.rl.masked import check_mask, masked_mean
from harnessrl.rl.registry import Registry

KL_ESTIMATORS: Registry[Callable[[Tensor], Tensor]] = Registry("KL estimator")


def _kl_input(log_prob: Tensor, ref_log_prob: Tensor) -> Tensor:
    return log_prob - ref_log_prob


@KL_ESTIMATORS.register("k1", "kl")
def kl_k1(x: Tensor) -> Tensor:
    """k1 = x, x = log pi - log pi_ref (unbiased, high variance, can be negative)."""
    return x


@KL_ESTIMATORS.register("k2", "mse")
def kl_k2(x: Tensor) -> Tensor:
    """k2 = x^2 / 2."""
    return 0.5 * x.square()


@KL_ESTIMATORS.register("k3", "low_var_kl")
def kl_k3(x: Tensor) -> Tensor:
    """k3 = exp(-x) + x - 1 >= 0, x clamped to [-20, 20] and the result to [-10, 10] (verl)."""
    x = x.clamp(-20.0, 20.0)
    return (torch.exp(-x) + x - 1.0).clamp(-10.0, 10.0)


def kl_penalty(log_prob: Tensor, ref_log_prob: Tensor, kind: str = "k3") -> Tensor:
    """Per-token KL estimate (B, T) between the policy and the reference."""
    return KL_ESTIMATORS.get(kind)(_kl_input(log_prob, ref_log_prob))


def kl_loss(log_prob: Tensor, ref_log_prob: Tensor, mask: Tensor | None = None, kind: str = "k3",
            agg: str = "token-mean", norm: float | None = None) -> LossOutput:
    """KL as a loss term (verl use_kl_loss, TRL beta; multiply `.loss` by the coefficient, e.g. 1e-3).

    log_prob, ref_log_prob, mask: (B, T). Returns the aggregated estimate as `.loss` and, in
    `.metrics["kl"]`, its detached token mean (what trainers log, whatever the aggregation).
    """
    mask = check_mask(mask, log_prob)
    kl = kl_penalty(log_prob, ref_log_prob, kind)  # (B, T)
    return LossOutput(aggregate(kl, mask, agg, norm), lambda: {"kl": masked_mean(kl.detach(), mask)})


def kl_in_reward(token_rewards: Tensor, log_prob: Tensor, ref_log_prob: Tensor, mask: Tensor | None = None,
                 coef: float = 1e-3, kind: str = "k1") -> Tensor:
    """Rewards with the KL folded in: r_t - coef * kl_t (no gradient), 0 where masked. (B, T)."""
    mask = check_mask(mask, token_rewards)
    out = token_rewards - coef * kl_penalty(log_prob.detach(), ref_log_prob.detach(), kind)
    return out if mask is None else out * mask
