"""What every LM recipe shares: settings (the model, its warm start, the shape of an RL batch) and
the reference log-probs that KL and mismatch estimates read from the record store.

The multi-harness and harness-teacher recipes subclass this and override only the defaults
their experiment needs, so `--model`, `--lora-rank`, `--set sft_seeds=...` mean the same in both.

Defaults are keyed to the model. The field defaults suit the tiny LM built here (random init,
3e-3 learning rates, 12-token replies); with `--model` they would wreck a pretrained model
(and cut its replies off), so a given model starts from `REAL_MODEL_DEFAULTS`, overlaid with
its own entry in `MODEL_PRESETS` when it has one (a folder holding a tiny LM keeps the tiny
defaults). Anything set explicitly (a scale preset, a config file, `--set`) still wins.
"""

from __future__ import annotations

import gc

import os
from typing import Any, Literal

import torch
from pydantic import Field, model_validator

from harnessrl.analysis.samples import Samples
from harnessrl.config import Config
from harnessrl.episode import Episode
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.records import RecordStore
from harnessrl.rl.trl_options import from_trl_names
from harnessrl.train.metrics import normalize_report_to
from harnessrl.train.sequences import build_batch, micro_batches


class LMRecipeConfig(Config):
    """Settings every LM recipe shares.

    TRL's GRPOConfig names are accepted for the options this config has (rl.trl_options):
    `beta` for kl_coef (unless a recipe has a `beta` of its own, as harness-teacher does) and
    `importance_sampling_level` for objective. Defaults and their convention: kl_coef 0.0 is
    TRL's beta default (no KL term; verl's use_kl_loss=False does the same); objective grpo is
    TRL's token-level default, with the clip range and loss aggregation the agent trainer picks
    per objective (rl/objectives.py: DAPO's clip-higher 0.2/0.28 and
    TRL's default loss_type dapo = token-mean for grpo; the GSPO paper's 3e-4/4e-4 and
    seq-mean-token-mean for gspo).
    """

    scale: Literal["small", "paper"] = "small"
    model: str | None = Field(None, description="A model path or cached id; None builds a tiny LM here.")
    lora_rank: int = Field(0, ge=0, description="LoRA rank for SFT and RL (0 = full fine-tuning, tiny models).")
    tiny_size: str = "micro"
    device: str = "auto"
    workers: int = Field(default_factory=lambda: 1 if torch.cuda.is_available() else max(1, min(2, os.cpu_count() or 1)))
    suite: str = "lookup"
    sft_seeds: int = Field(12, ge=1, description="Demonstrations per training task (lookup draws a world per seed).")
    sft_tasks: int | None = Field(None, ge=1, description="Demonstrate only the first N training tasks (None: all); "
                                  "caps SFT time for a real model on a CPU.")
    sft_epochs: int = Field(4, ge=1)
    sft_lr: float = 3e-3
    sft_batch: int = 32
    objective: str = Field("grpo", description="grpo | gspo | gspo_token | rloo | ppo, or a registered objective "
                           "(rl/objectives.py).")
    group_size: int = Field(8, ge=2, description="Samples per (task, harness) in an RL batch.")
    tasks_per_update: int = Field(4, ge=1)
    lr: float = 5e-4
    kl_coef: float = 0.0
    max_new_tokens: int = 12
    max_context_tokens: int | None = None
    # memory budgets: what a real model on a small machine needs to be able to lower
    sft_micro_batch_tokens: int = Field(32_768, ge=64, description="Padded tokens per SFT forward/backward pass.")
    micro_batch_tokens: int = Field(32_768, ge=64, description="Padded tokens per RL forward/backward pass.")
    eval_batch_tokens: int = Field(65_536, ge=64, description="Context tokens one lockstep sampling group may hold "
                                   "(bounds the KV cache); the group size follows from it.")
    gradient_checkpointing: bool = Field(False, description="Recompute activations in the backward pass (less memory).")
    engine: Literal["native", "trl"] = Field(
        "native", description="RL trainer: native (harnessrl's own, one process) or trl (TRL's GRPOTrainer: "
        "accelerate, DeepSpeed/FSDP, vLLM; recipes/engine.py). --scale paper uses trl.")
    report_to: list[Literal["tensorboard", "wandb", "trackio", "mlflow"]] = Field(
        default_factory=list, description="Trackers every RL run of the recipe also logs to (TRL's names; each run's "
        "metrics.csv is always written); see AgentTrainConfig.report_to.")

    @model_validator(mode="before")
    @classmethod
    def _defaults_for_the_model(cls, data: Any) -> Any:
        data = normalize_report_to(from_trl_names(data, cls.model_fields))  # TRL's beta, importance_sampling_level, report_to
        if isinstance(data, dict) and data.get("model") and not _is_tiny(str(data["model"])):
            preset = {**REAL_MODEL_DEFAULTS, **MODEL_PRESETS.get(str(data["model"]), {})}
            data = {**{k: v for k, v in preset.items() if k in cls.model_fields}, **data}
        return data


#: Any given (pretrained) model: LoRA, learning rates for pretrained weights, replies long enough to finish.
REAL_MODEL_DEFAULTS: dict[str, Any] = {
    "lora_rank": 16, "sft_lr": 1e-4, "sft_batch": 8, "sft_epochs": 2, "lr": 2e-5, "max_new_tokens": 256,
    "sft_micro_batch_tokens": 8192, "micro_batch_tokens": 8192, "eval_batch_tokens": 32_768,
}
#: Per named model (`harnessrl models list`), on top of REAL_MODEL_DEFAULTS.
MODEL_PRESETS: dict[str, dict[str, Any]] = {
    # 135M parameters, 8k window. On 2 CPU cores a LoRA r=16 forward+backward runs ~40 tokens/s,
    # so the small scale (the lookup suite: replies are one short command) is cut to fit ~90 min:
    # one seed per grouping rule, a few updates, SFT on 96 demonstrations. Measured here: SFT 63 s,
    # one RL update (24 episodes) 70-180 s depending on load (docs/real-model.md).
    "smollm2-135m": {
        "lr": 1e-4, "sft_lr": 3e-4, "max_new_tokens": 48, "max_context_tokens": 1024,
        "micro_batch_tokens": 4096, "sft_micro_batch_tokens": 4096, "eval_batch_tokens": 32_768,
        # SFT on 96 of the training tasks (all 360 would take ~45 min here), twice
        "sft_seeds": 1, "sft_tasks": 96, "sft_epochs": 2, "sft_batch": 8, "group_size": 4, "tasks_per_update": 2,
        # recipe multi-harness (40 held-out tasks: a gain CI over 20 would be too wide to exclude 0)
        "seeds": [0], "updates": 24, "eval_fraction": 0.1, "eval_seeds": 1,
        # study (harness-teacher); 16 updates a further-training round: with 4 nothing moved
        # (gains -0.16 and 0.00), with 16 the chosen harness gained +0.625 (docs/real-model.md)
        "eval_tasks": 8, "agent_updates": 8, "further_updates": 16, "epochs": 1, "minibatches": 1,
        "ref_samples": 8, "eval_samples": 4,
    },
}


def _is_tiny(model: str) -> bool:
    """A model folder whose config describes a tiny LM (< 20M parameters, like the ones built here)
    keeps the tiny defaults; named models, bigger folders and hub ids get the real-model ones."""
    import json
    from pathlib import Path

    cfg = Path(model) / "config.json"
    if model in MODEL_PRESETS or not cfg.exists():
        return False
    try:
        c = json.loads(cfg.read_text())
        h, layers, vocab = int(c["hidden_size"]), int(c["num_hidden_layers"]), int(c["vocab_size"])
    except (ValueError, KeyError, TypeError):
        return False
    return 12 * layers * h * h + vocab * h < 20_000_000


def policy_config(cfg: LMRecipeConfig, model: str, **kw: Any) -> LMConfig:
    """The LMConfig a recipe builds for `model`, carrying the recipe's budgets and memory options."""
    base = dict(device=cfg.device, max_new_tokens=cfg.max_new_tokens, max_context_tokens=cfg.max_context_tokens,
                gradient_checkpointing=cfg.gradient_checkpointing)
    return LMConfig(model=model, **{**base, **kw})


class LazyPolicy:
    """A policy loaded on first use and dropped by `release()`.

    The study's reference scores samples between stages; it is not needed while an RL run
    holds its own copy of the model, and with a real model two full copies would sit in memory.
    Loading the same folder again gives the same weights, so the scores do not change.
    """

    def __init__(self, cfg: LMConfig):
        self.cfg, self._policy = cfg, None

    def get(self) -> LMPolicy:
        if self._policy is None:
            self._policy = LMPolicy.from_config(self.cfg)
        return self._policy

    def release(self) -> None:
        self._policy = None
        gc.collect()


def sampling_group_size(cfg: LMRecipeConfig, n: int = 1, turns: int = 4) -> int:
    """Episodes sampled in one lockstep group, so that their contexts fit `eval_batch_tokens`.

    An episode's context grows to at most max_context_tokens (default: `turns` replies of
    max_new_tokens plus a 1024-token prompt); the KV cache of a group is proportional to it.
    The tiny LM built here (no model given) keeps its groups of max(n, 256): its cache is
    kilobytes, and its recorded results stay reproducible.
    """
    if not cfg.model:
        return max(n, 256)
    per_episode = cfg.max_context_tokens or (1024 + turns * cfg.max_new_tokens)
    return max(1, cfg.eval_batch_tokens // per_episode)


@torch.no_grad()
def attach_ref_logprob(reference: LMPolicy, episodes: list[Episode], micro_tokens: int = 65_536) -> None:
    """metadata["ref_logprob"] = log pi_ref(trajectory): the generated tokens re-scored by the reference."""
    from harnessrl.policies.scoring import token_logprobs

    scored = [e for e in episodes if any(len(t.token_ids) for t in e.turns)]
    if not scored:
        return
    batch = build_batch(scored, reference.pad_token_id)
    totals = torch.zeros(len(scored), dtype=torch.float64)
    for idx in micro_batches(batch, torch.arange(batch.ids.shape[0]), micro_tokens):
        mb = batch.rows(idx).to(reference.device)
        lp = token_logprobs(reference.model, mb.ids, mb.attention, mb.mask, 1.0, share_prefix=True).logprobs
        totals.index_add_(0, mb.episode.cpu(), (lp * mb.mask).sum(-1).double().cpu())
    for ep, total in zip(scored, totals.tolist()):
        ep.metadata["ref_logprob"] = total


def samples(store: RecordStore, *run_ids: str) -> Samples:
    quoted = ", ".join("'" + r.replace("'", "") + "'" for r in run_ids)
    return Samples.from_store(store, where=f"run_id IN ({quoted})")
