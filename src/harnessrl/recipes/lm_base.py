"""What every LM recipe shares: settings (the model, its warm start, the shape of an RL batch) and
the reference log-probs that KL and mismatch estimates read from the record store.

The multi-harness and harness-teacher recipes subclass this and override only the defaults
their experiment needs, so `--model`, `--lora-rank`, `--set sft_seeds=...` mean the same in both.
"""

from __future__ import annotations

import os
from typing import Literal

import torch
from pydantic import Field

from harnessrl.analysis.samples import Samples
from harnessrl.config import Config
from harnessrl.episode import Episode
from harnessrl.policies.lm import LMPolicy
from harnessrl.records import RecordStore
from harnessrl.train.sequences import build_batch, micro_batches


class LMRecipeConfig(Config):
    scale: Literal["small", "paper"] = "small"
    model: str | None = Field(None, description="A model path or cached id; None builds a tiny LM here.")
    lora_rank: int = Field(0, ge=0, description="LoRA rank for SFT and RL (0 = full fine-tuning, tiny models).")
    tiny_size: str = "micro"
    device: str = "auto"
    workers: int = Field(default_factory=lambda: 1 if torch.cuda.is_available() else max(1, min(2, os.cpu_count() or 1)))
    suite: str = "lookup"
    sft_seeds: int = Field(12, ge=1, description="Demonstrations per training task (lookup draws a world per seed).")
    sft_epochs: int = Field(4, ge=1)
    sft_lr: float = 3e-3
    sft_batch: int = 32
    objective: str = "grpo"
    group_size: int = Field(8, ge=2, description="Samples per (task, harness) in an RL batch.")
    tasks_per_update: int = Field(4, ge=1)
    lr: float = 5e-4
    kl_coef: float = 0.0
    max_new_tokens: int = 12
    max_context_tokens: int | None = None


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
