"""What the PPO trainer logs per update: loss statistics, value-function fit, episode returns per context."""

from __future__ import annotations

import numpy as np
import torch


class UpdateStats:
    """Per-update loss statistics, accumulated as tensors and read once (no per-minibatch .item())."""

    def __init__(self) -> None:
        self.sums: list[torch.Tensor] = []

    def add(self, *values: torch.Tensor) -> None:
        self.sums.append(torch.stack([v.detach().float() for v in values]))

    @property
    def last_kl(self) -> float:
        return float(self.sums[-1][3])

    def row(self, update: int, global_step: int, lr: float) -> dict[str, float]:
        m = torch.stack(self.sums).mean(0).tolist()
        return {"update": update + 1, "global_step": global_step, "lr": lr, "policy_loss": m[0], "value_loss": m[1],
                "entropy": m[2], "approx_kl": m[3], "clipfrac": m[4]}


def value_stats(values: torch.Tensor, returns: torch.Tensor, context: torch.Tensor, K: int) -> dict[str, float]:
    """Explained variance and per-context mean squared error of V against the GAE returns of this rollout."""
    values, returns, context = values.cpu(), returns.cpu(), context.cpu()
    var = returns.var()
    out = {"explained_variance": float(1 - (returns - values).var() / var) if var > 0 else float("nan")}
    err = torch.zeros(K).index_add_(0, context, (values - returns).square())
    count = torch.zeros(K).index_add_(0, context, torch.ones_like(values))
    for k, e in enumerate((err / count.clamp(min=1)).tolist()):
        out[f"value_mse/{k}"] = e
    return out


def episode_stats(new: list, K: int) -> dict[str, float]:
    """Mean return per context of the episodes that finished in this rollout."""
    out: dict[str, float] = {}
    for k in range(K):
        rs = [e[3] for e in new if e[1] == k]
        out[f"return/{k}"] = float(np.mean(rs)) if rs else float("nan")
    out["return"] = float(np.mean([e[3] for e in new])) if new else float("nan")
    return out
