"""TRL's GRPOConfig option names, accepted next to harnessrl's so that a config written for TRL reads here.

    TRL name                   harnessrl name   value
    epsilon                    clip_low         as is (TRL default 0.2)
    epsilon_high               clip_high        as is; TRL's None = epsilon: `epsilon` alone sets both
    delta                      dual_clip        as is (TRL's two-sided clip: the ratio of A < 0 tokens
                                                capped at delta, the same loss as verl's dual clip)
    beta                       kl_coef          as is
    loss_type                  loss_agg         grpo -> seq-mean-token-mean, bnpo | dapo -> token-mean,
                                                dr_grpo -> seq-mean-token-sum-norm (rl.losses.TRL_LOSS_TYPES)
    importance_sampling_level  objective        "sequence": grpo becomes gspo (TRL's GSPO); "token": a
                                                token-level objective, unchanged

A config calls `from_trl_names` in a pydantic "before" validator. Only names whose harnessrl
field the config has are translated; giving a TRL name and its harnessrl name together is an error.
A config whose fields are named otherwise passes its own `renamed` (the classic PPO trainer:
epsilon -> clip_coef). A config with one symmetric clip has no epsilon_high: it accepts
epsilon_high only equal to epsilon (TRL's symmetric range) and names the conflict otherwise.
A TRL name that is itself a field of the config keeps the config's meaning (the harness-teacher
recipe's `beta` weighs its soft ceiling, not the KL loss).
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Any

from harnessrl.rl.losses import TRL_LOSS_TYPES
from harnessrl.rl.objectives import OBJECTIVES

#: TRL name -> harnessrl field (values copied as they are).
RENAMED = {"epsilon": "clip_low", "epsilon_high": "clip_high", "delta": "dual_clip", "beta": "kl_coef"}


def from_trl_names(data: Any, fields: Container[str], renamed: Mapping[str, str] = RENAMED) -> Any:
    """`data` (a config mapping) with TRL's option names replaced by harnessrl's. fields: the
    config's field names; renamed: TRL name -> the config's field for the names copied as they are.
    A TRL name whose target is not among `fields` is left for the config to reject as an unknown
    key. Non-mappings pass through (pydantic reports them)."""
    if not isinstance(data, Mapping):
        return data
    out = dict(data)
    renamed = {trl: ours for trl, ours in renamed.items() if ours in fields and trl not in fields}
    high = renamed.get("epsilon_high")
    if "epsilon" in renamed and high is None and "epsilon_high" in out:
        _symmetric(out, renamed["epsilon"])
    if "epsilon" in out and high is not None and "epsilon_high" not in out and high not in out:
        out["epsilon_high"] = out["epsilon"]  # TRL: epsilon_high None means epsilon (a symmetric range)
    for trl, ours in renamed.items():
        if trl in out:
            _take(out, trl, ours, out.pop(trl))
    if "loss_type" in out and "loss_agg" in fields and "loss_type" not in fields:
        kind = out.pop("loss_type")
        if kind not in TRL_LOSS_TYPES:
            raise ValueError(f"loss_type {kind!r}: TRL's loss types here are {', '.join(TRL_LOSS_TYPES)} "
                             "(or give loss_agg directly)")
        _take(out, "loss_type", "loss_agg", TRL_LOSS_TYPES[kind])
    if "importance_sampling_level" in out and "objective" in fields:
        out["objective"] = _objective(out.pop("importance_sampling_level"), out.get("objective"))
    return out


def _symmetric(out: dict[str, Any], clip: str) -> None:
    """A config with one symmetric clip: epsilon_high may only repeat epsilon (TRL's None)."""
    high, low = out.pop("epsilon_high"), out.get("epsilon", out.get(clip))
    if high is not None and high != low:
        raise ValueError(f"epsilon_high={high!r} differs from epsilon={low!r}, but this config clips the ratio "
                         f"symmetrically ({clip}); give epsilon alone")


def _take(out: dict[str, Any], trl: str, ours: str, value: Any) -> None:
    if ours in out and out[ours] != value:
        raise ValueError(f"{trl} (TRL's name) and {ours} are the same option; give one of them")
    out[ours] = value


def _sequence_level(objective: str | None) -> bool:
    return objective in OBJECTIVES and OBJECTIVES.get(objective).level == "sequence"


def _objective(level: Any, objective: str | None) -> str:
    if level == "sequence":
        if objective in (None, "grpo"):
            return "gspo"
        if _sequence_level(objective):
            return objective
        raise ValueError(f"importance_sampling_level='sequence' needs objective grpo or gspo, not {objective!r}")
    if level == "token":
        if _sequence_level(objective):
            raise ValueError(f"importance_sampling_level='token' contradicts objective {objective!r} (a sequence ratio)")
        return objective or "grpo"
    raise ValueError(f"importance_sampling_level {level!r}: choose token or sequence")
