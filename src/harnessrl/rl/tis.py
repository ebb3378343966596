"""Truncated importance sampling (TIS) between the sampler and the trainer.

The sampler records each generated token's log-prob as it drew it; the trainer recomputes it.
The two differ whenever they compute differently: bf16 sampling against an fp32 trainer, another
batch shape (other rounding), an external engine (vLLM), a prefix cache. The policy gradient is
then taken on samples from pi_sampler while it assumes pi_train_old, which biases it. The fix in
verl (`tis_imp_ratio_cap`) and TRL (`vllm_importance_sampling_correction`, mode token_truncate)
weighs each token's policy-gradient loss by

    w_t = min(pi_train_old(y_t) / pi_sampler(y_t), cap) = min(exp(logp_train_old - logp_sampler), cap)

(Yao et al. 2025, "Your efficient RL framework secretly brings you off-policy RL training").
Truncation bounds the variance at the price of a small bias where the cap binds; the metrics
below say how often it does. w is detached: it scales the loss, it is not trained.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from harnessrl.rl.masked import masked_mean


def truncated_is_weights(train_logp: Tensor, sampler_logp: Tensor, mask: Tensor, cap: float = 2.0,
                         level: str = "token") -> tuple[Tensor, dict[str, Tensor]]:
    """Per-token TIS weights and mismatch diagnostics.

    Args:
        train_logp: (B, T) log pi_train_old of the taken tokens, as the trainer computes them (detached).
        sampler_logp: (B, T) the log-probs the sampler recorded for the same tokens.
        mask: (B, T) 1 on generated (trained) tokens, 0 elsewhere.
        cap: upper bound of a weight (> 0; verl / TRL use 2-3).
        level: "token": one weight per token; "sequence": one per row, exp of the row's mean
            log-ratio (for sequence-level objectives such as GSPO), on each of its tokens.

    Returns:
        weights: (B, T) min(exp(train_logp - sampler_logp), cap), 0 where mask is 0 (no grad).
        metrics: scalars (0-dim tensors)
            sampler_abs_dlogp: mean over masked tokens of |train_logp - sampler_logp|;
            tis_clipfrac: fraction of ratios above the cap (of tokens, or of non-empty rows at
                sequence level);
            tis_weight_mean: mean weight over masked tokens.
    """
    if cap <= 0:
        raise ValueError(f"TIS cap must be > 0; got {cap}")
    if level not in ("token", "sequence"):
        raise ValueError(f"TIS level {level!r}: choose token or sequence")
    with torch.no_grad():
        mask = mask.float()
        delta = (train_logp.float() - sampler_logp.float()) * mask  # (B, T)
        log_cap = math.log(cap)
        if level == "sequence":
            n = mask.sum(-1)
            log_w = (delta.sum(-1) / n.clamp(min=1))[:, None].expand_as(mask)  # (B, T)
            live = (n > 0).float()
            clipped = ((log_w[:, 0] > log_cap).float() * live).sum() / live.sum().clamp(min=1)
        else:
            log_w = delta
            clipped = masked_mean((log_w > log_cap).float(), mask)
        weights = torch.exp(log_w.clamp(max=log_cap)) * mask
        metrics = {"sampler_abs_dlogp": masked_mean(delta.abs(), mask), "tis_clipfrac": clipped,
                   "tis_weight_mean": masked_mean(weights, mask)}
    return weights, metrics
