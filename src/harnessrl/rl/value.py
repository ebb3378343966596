"""The critic's loss as a pure tensor function: squared error, optionally clipped around the
values of the behaviour critic (PPO / verl `clip_vf`).

Shapes: values, returns, old_values, mask: (B, T) (T = 1 for classic RL) or (B,).
"""

from __future__ import annotations

import torch
from torch import Tensor

from harnessrl.rl.losses import LossOutput, aggregate
from harnessrl.rl.masked import check_mask, masked_mean


def value_loss(values: Tensor, returns: Tensor, mask: Tensor | None = None, *, old_values: Tensor | None = None,
               clip: float | None = None, agg: str = "token-mean", norm: float | None = None) -> LossOutput:
    """0.5 (V - R)^2, or with clip c: 0.5 max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2).

    values, returns, mask: (B, T) (T = 1 for classic RL) or (B,) with mask None. old_values
    (the behaviour critic's values, shaped like values) is needed only with clip. The clipped
    form is verl's compute_value_loss (and CleanRL's); metrics: vf_clipfrac, the fraction of
    positions where the clipped error is the larger one (0 without clip).
    """
    if clip is not None and old_values is None:
        raise ValueError("value_loss with clip needs old_values (the behaviour critic's values)")
    if values.dim() == 1:
        values, returns = values[:, None], returns[:, None]
        old_values = None if old_values is None else old_values[:, None]
        mask = None if mask is None else mask[:, None]
    mask = check_mask(mask, values)
    error = (values - returns).square()
    if clip is None:
        return LossOutput(0.5 * aggregate(error, mask, agg, norm), {})
    clipped_values = old_values + (values - old_values).clamp(-clip, clip)
    clipped_error = (clipped_values - returns).square()
    loss = 0.5 * aggregate(torch.maximum(error, clipped_error), mask, agg, norm)
    return LossOutput(loss, lambda: {"vf_clipfrac": masked_mean((clipped_error > error).to(values.dtype).detach(), mask)})
