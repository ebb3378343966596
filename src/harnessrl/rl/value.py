"""The critic's loss as a pure tensor function: squared error, optionally clipped around the
values of the behaviour critic (PPO / verl `clip_vf`).

Shapes: values, old_values, returns, mask: (B, T) (T = 1 for classic RL) or (B,).
"""

from __future__ import annotations

import torch
from torch import Tensor

from harnessrl.rl.losses import LossOutput, aggregate
from harnessrl.rl.masked import check_mask, masked_mean


def value_loss(values: Tensor, old_values: Tensor, returns: Tensor, mask: Tensor | None = None, *,
               clip: float | None = None, agg: str = "token-mean", norm: float | None = None) -> LossOutput:
    """0.5 (V - R)^2, or with clip: 0.5 max((V - R)^2, (clip(V, V_old - c, V_old + c) - R)^2).

    values, old_values, returns, mask: (B, T) (T = 1 for classic RL) or (B,) with mask None.
    """
    if values.dim() == 1:
        values, old_values, returns = values[:, None], old_values[:, None], returns[:, None]
        mask = None if mask is None else mask[:, None]
    mask = check_mask(mask, values)
    if clip is None:
        return LossOutput(0.5 * aggregate((values - returns).square(), mask, agg, norm), {})
    loss, use_clipped = _ClippedValueLoss.apply(values, old_values, returns, clip)
    return LossOutput(aggregate(loss, mask, agg, norm), lambda: {"vf_clipfrac": masked_mean(use_clipped.to(values.dtype), mask)})


class _ClippedValueLoss(torch.autograd.Function):
    """0.5 max((V - R)^2, (V_clip - R)^2) per element, V_clip = V_old + clip(V - V_old, -c, c).

    The gradient is (V - R) where the unclipped error is kept, (V_clip - R) where the clipped one
    is and V is inside the clip range, 0 otherwise: saved in the forward pass, one multiply in
    the backward pass (instead of autograd through sub, clamp, square and maximum)."""

    @staticmethod
    def forward(ctx, values, old_values, returns, clip):
        diff = values - returns
        delta = values - old_values
        diff_clipped = old_values + delta.clamp(-clip, clip) - returns
        use_clipped = diff_clipped.square() > diff.square()
        kept = torch.where(use_clipped, diff_clipped, diff)
        ctx.save_for_backward(torch.where(use_clipped & (delta.abs() >= clip), torch.zeros_like(kept), kept))
        ctx.mark_non_differentiable(use_clipped)
        return 0.5 * kept.square(), use_clipped

    @staticmethod
    def backward(ctx, grad_loss, _):
        (coef,) = ctx.saved_tensors
        return grad_loss * coef, None, None, None
