"""A new objective in one file, as a user would write it: the importance-weighted policy gradient
without a clip (-A r per token), paired with RLOO advantages, and its one registration."""

from __future__ import annotations

import torch
from torch import Tensor

from harnessrl.rl.losses import LossOutput, aggregate
from harnessrl.rl.masked import masked_mean
from harnessrl.rl.objectives import OBJECTIVES, Objective, register_objective

NAME = "toy_pg"


def toy_pg_loss(log_prob: Tensor, old_log_prob: Tensor, advantages: Tensor, mask: Tensor | None = None, *,
                clip_low: float = 0.2, clip_high: float | None = None, dual_clip: float | None = None,
                agg: str = "token-mean", norm: float | None = None, logits: Tensor | None = None) -> LossOutput:
    """-A r with r = pi / pi_old per token. log_prob, old_log_prob, mask: (B, T); advantages (B, T) or (B,)."""
    adv = advantages if advantages.dim() == 2 else advantages[:, None]
    ratio = torch.exp(log_prob - old_log_prob)
    return LossOutput(aggregate(-adv * ratio, mask, agg, norm), lambda: {"ratio_mean": masked_mean(ratio.detach(), mask)})


if NAME not in OBJECTIVES:  # test modules may be imported twice
    register_objective(Objective(NAME, advantage="rloo", clip=(0.1, 0.1), agg="seq-mean-token-sum"), toy_pg_loss)
