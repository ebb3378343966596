"""Objectives: everything a trainer needs to know about one, declared in one place.

    OBJECTIVES.get("gspo").clip        # (3e-4, 4e-4), its default clip range
    OBJECTIVES.get("rloo").advantage   # "rloo": the advantage estimator it is paired with

A new objective is one file: its loss (shapes and keywords as `rl.losses.ppo_loss`: log_prob,
old_log_prob (B, T), advantages (B, T) or (B,), mask; clip_low, clip_high, dual_clip, agg, norm,
logits; returns a `LossOutput`) and one `register_objective` call:

    def my_loss(log_prob, old_log_prob, advantages, mask=None, **kw) -> LossOutput: ...
    register_objective(Objective("my_objective", advantage="grpo", clip=(0.2, 0.28)), my_loss)

after which `objective: my_objective` is a valid run config for the native trainer (train/agent.py,
train/lm_update.py read the fields below) and `policy_loss("my_objective", ...)` calls it. The TRL
engine takes only objectives with a GRPOTrainer equivalent (`trl_level`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from harnessrl.rl.losses import POLICY_LOSSES, LossOutput
from harnessrl.rl.registry import Registry


@dataclass(frozen=True)
class Objective:
    """name: the config's `objective` (and the POLICY_LOSSES name of its loss).
    advantage: the estimator it is paired with: a group estimator of rl.advantages.ADVANTAGES
        (grpo, rloo, dr_grpo), or "gae" (a critic's GAE over tokens: PPO).
    clip: default (clip_low, clip_high). agg: default aggregation (rl.losses.AGGREGATIONS).
    level: where the importance ratio lives: "token", or "sequence" (one ratio per sequence,
        GSPO; such a ratio has no dual clip).
    sequence_advantage: the loss takes one advantage per sequence (B,) and offline data gets one
        importance weight per sequence; else advantages and weights are per token (B, T).
    trl_level: TRL GRPOConfig.importance_sampling_level of the GRPOTrainer equivalent; None: none.
    """

    name: str
    advantage: str = "grpo"
    clip: tuple[float, float] = (0.2, 0.28)
    agg: str = "token-mean"
    level: Literal["token", "sequence"] = "token"
    sequence_advantage: bool = False
    trl_level: Literal["token", "sequence"] | None = None

    @property
    def critic(self) -> bool:
        """Advantages come from a learned value function (PPO), not from the group of rollouts."""
        return self.advantage == "gae"

    @property
    def loss(self) -> Callable[..., LossOutput]:
        return POLICY_LOSSES.get(self.name)


OBJECTIVES: Registry[Objective] = Registry("objective")


def register_objective(objective: Objective, loss: Callable[..., LossOutput] | None = None) -> Objective:
    """Declare `objective`; `loss` registers its loss under the same name (built-ins register theirs
    in rl/losses.py)."""
    if loss is not None:
        POLICY_LOSSES.register(objective.name)(loss)
    POLICY_LOSSES.get(objective.name)  # an objective without a loss fails here, not in the first update
    return OBJECTIVES.register(objective.name)(objective)


# DAPO's clip-higher (0.2, 0.28) for the token-level group objectives, PPO's symmetric 0.2, and the
# GSPO paper's (3e-4, 4e-4) with seq-mean-token-mean for the sequence-level ones.
register_objective(Objective("ppo", advantage="gae", clip=(0.2, 0.2)))
register_objective(Objective("grpo", trl_level="token"))
register_objective(Objective("rloo", advantage="rloo"))
register_objective(Objective("gspo", clip=(3e-4, 4e-4), agg="seq-mean-token-mean", level="sequence",
                             sequence_advantage=True, trl_level="sequence"))
register_objective(Objective("gspo_token", clip=(3e-4, 4e-4), agg="seq-mean-token-mean", level="sequence"))
