"""Masked reductions shared by advantages and losses.

A mask is 1 (or True) where a token/step counts and 0 where it does not (prompt and
tool-output tokens, padding). `None` means every position counts; the functions then take
the cheaper unmasked path.
"""

from __future__ import annotations

import torch
from torch import Tensor


def masked_sum(x: Tensor, mask: Tensor | None, dim: int | None = None) -> Tensor:
    """Sum of x where mask is set. x, mask: same shape (or broadcastable)."""
    if mask is None:
        return x.sum() if dim is None else x.sum(dim)
    if dim is None and x.shape == mask.shape and x.dtype == mask.dtype:
        return torch.dot(x.reshape(-1), mask.reshape(-1))  # one fused multiply-sum (and one backward op)
    x = x * mask
    return x.sum() if dim is None else x.sum(dim)


def masked_mean(x: Tensor, mask: Tensor | None, dim: int | None = None) -> Tensor:
    """Mean of x over masked positions; 0 (not NaN) where no position is set."""
    if mask is None:
        return x.mean() if dim is None else x.mean(dim)
    count = mask.sum() if dim is None else mask.sum(dim)
    return masked_sum(x, mask, dim) / count.clamp(min=1)


def masked_var(x: Tensor, mask: Tensor | None, unbiased: bool = True) -> Tensor:
    """Variance of x over all masked positions (a scalar)."""
    mean = masked_mean(x, mask)
    n = torch.as_tensor(x.numel() if mask is None else mask.sum(), dtype=x.dtype)
    return masked_sum((x - mean) ** 2, mask) / (n - 1 if unbiased else n).clamp(min=1)


def masked_whiten(x: Tensor, mask: Tensor | None, shift_mean: bool = True, eps: float = 1e-8) -> Tensor:
    """(x - mean) / sqrt(var + eps) over masked positions; masked-out positions become 0.

    x, mask: (B, T). With shift_mean=False the mean is added back (verl's convention).
    """
    mean, var = masked_mean(x, mask), masked_var(x, mask)
    out = (x - mean) * torch.rsqrt(var + eps)
    if not shift_mean:
        out = out + mean
    return out if mask is None else out * mask


def check_mask(mask: Tensor | None, like: Tensor, name: str = "mask") -> Tensor | None:
    """Return mask as x's dtype, or raise a clear error when its shape does not match."""
    if mask is None:
        return None
    if mask.shape != like.shape:
        raise ValueError(f"{name} has shape {tuple(mask.shape)} but the values have shape {tuple(like.shape)}")
    return mask.to(like.dtype)
