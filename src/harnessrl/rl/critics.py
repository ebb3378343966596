"""Critics with one interface, `critic(features, context) -> value`, and three ways to use the context.

features: (B, F) float, the observation or a policy trunk's output; context: (B,) int64, the
index of the environment/context each sample came from (0 .. num_contexts-1); value: (B,).

- `shared`:      V(x). One head for all contexts: where contexts give the same state different
                 returns, it can only learn their average (the conditioned-critic paper's point).
- `conditioned`: V([x, c]). The context enters as a one-hot vector or a learned embedding
                 concatenated to the features.
- `multihead`:   V_c(x). A shared body and one output head per context, selected by index.

An index outside 0 .. num_contexts-1 raises a ValueError that names it and the valid range.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from harnessrl.rl.registry import Registry

CRITICS: Registry[type["Critic"]] = Registry("critic")

ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


def layer_init(layer: nn.Linear, std: float = math.sqrt(2), bias: float = 0.0) -> nn.Linear:
    """Orthogonal weights, constant bias: the PPO convention (cleanrl, SB3)."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


def mlp(in_dim: int, hidden: Sequence[int], activation: str = "tanh") -> tuple[nn.Sequential, int]:
    """Hidden layers only; returns the module and its output width (in_dim when hidden is empty)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; choose one of {sorted(ACTIVATIONS)}")
    layers: list[nn.Module] = []
    width = in_dim
    for h in hidden:
        layers += [layer_init(nn.Linear(width, h)), ACTIVATIONS[activation]()]
        width = h
    return nn.Sequential(*layers), width


def run_mlp(body: nn.Sequential, x: Tensor) -> Tensor:
    """body(x) with Linear and Tanh applied as addmm/tanh calls (same arithmetic, no module dispatch:
    for the small MLPs of classic RL the dispatch costs as much as the maths)."""
    for m in body:
        if isinstance(m, nn.Linear):
            x = torch.addmm(m.bias, x, m.weight.t())
        elif isinstance(m, nn.Tanh):
            x = torch.tanh(x)
        else:
            x = m(x)
    return x


class Critic(nn.Module):
    """Base class: holds the number of contexts and validates indices."""

    kind = "base"

    def __init__(self, feature_dim: int, num_contexts: int):
        super().__init__()
        if num_contexts < 1:
            raise ValueError(f"num_contexts must be >= 1; got {num_contexts}")
        self.feature_dim, self.num_contexts = feature_dim, num_contexts

    def check_context(self, features: Tensor, context: Tensor) -> None:
        if features.dim() != 2 or features.shape[1] != self.feature_dim:
            raise ValueError(f"{self.kind} critic expects features of shape (B, {self.feature_dim}); got {tuple(features.shape)}")
        if context.shape != features.shape[:1]:
            raise ValueError(f"context must have shape ({features.shape[0]},); got {tuple(context.shape)}")
        if context.dtype.is_floating_point or context.dtype == torch.bool:
            raise ValueError(f"context must be an integer index tensor; got dtype {context.dtype}")
        if context.numel():
            lo, hi = int(context.min()), int(context.max())
            if lo < 0 or hi >= self.num_contexts:
                bad = lo if lo < 0 else hi
                raise ValueError(
                    f"unknown context index {bad}: this {self.kind} critic was built for {self.num_contexts} "
                    f"contexts (valid indices 0..{self.num_contexts - 1})"
                )

    def forward(self, features: Tensor, context: Tensor, check: bool = True) -> Tensor:  # pragma: no cover - abstract
        """Values (B,). check=False skips validating `context` (for a caller that validated it once)."""
        raise NotImplementedError


@CRITICS.register("shared")
class SharedCritic(Critic):
    """V(x): ignores the context (after checking it)."""

    kind = "shared"

    def __init__(self, feature_dim: int, num_contexts: int, hidden: Sequence[int] = (64, 64), activation: str = "tanh"):
        super().__init__(feature_dim, num_contexts)
        self.body, width = mlp(feature_dim, hidden, activation)
        self.head = layer_init(nn.Linear(width, 1), std=1.0)

    def forward(self, features: Tensor, context: Tensor, check: bool = True) -> Tensor:
        if check:
            self.check_context(features, context)
        return self.head(run_mlp(self.body, features)).squeeze(-1)


@CRITICS.register("conditioned")
class ConditionedCritic(Critic):
    """V([x, onehot(c)]) or V([x, embedding(c)])."""

    kind = "conditioned"

    def __init__(self, feature_dim: int, num_contexts: int, hidden: Sequence[int] = (64, 64), activation: str = "tanh",
                 conditioning: str = "onehot", embed_dim: int = 8):
        super().__init__(feature_dim, num_contexts)
        if conditioning not in ("onehot", "embedding"):
            raise ValueError(f"unknown conditioning {conditioning!r}; choose onehot or embedding")
        self.conditioning = conditioning
        self.embedding = nn.Embedding(num_contexts, embed_dim) if conditioning == "embedding" else None
        extra = embed_dim if self.embedding is not None else num_contexts
        self.body, width = mlp(feature_dim + extra, hidden, activation)
        self.head = layer_init(nn.Linear(width, 1), std=1.0)

    def forward(self, features: Tensor, context: Tensor, check: bool = True) -> Tensor:
        if check:
            self.check_context(features, context)
        if self.embedding is not None:
            code = self.embedding(context)
        else:
            code = F.one_hot(context, self.num_contexts).to(features.dtype)
        return self.head(run_mlp(self.body, torch.cat([features, code], dim=-1))).squeeze(-1)


@CRITICS.register("multihead")
class MultiHeadCritic(Critic):
    """V_c(x): a shared body and num_contexts output heads; each sample reads its context's head."""

    kind = "multihead"

    def __init__(self, feature_dim: int, num_contexts: int, hidden: Sequence[int] = (64, 64), activation: str = "tanh"):
        super().__init__(feature_dim, num_contexts)
        self.body, width = mlp(feature_dim, hidden, activation)
        self.heads = layer_init(nn.Linear(width, num_contexts), std=1.0)

    def forward(self, features: Tensor, context: Tensor, check: bool = True) -> Tensor:
        if check:
            self.check_context(features, context)
        return self.heads(run_mlp(self.body, features)).gather(1, context[:, None]).squeeze(-1)


def make_critic(name: str, feature_dim: int, num_contexts: int, **kwargs) -> Critic:
    """Build the registered critic `name` (shared, conditioned, multihead)."""
    return CRITICS.get(name)(feature_dim, num_contexts, **kwargs)
