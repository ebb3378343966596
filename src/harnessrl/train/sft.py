"""Supervised warm start of an LM on demonstration episodes (e.g. an oracle through one harness).

    demos = demonstrations(policy, Oracle(), harness, tasks)      # episodes with the LM's token layout
    losses = sft(policy, demos, epochs=3, lr=1e-3)

Demonstrations are produced by running a scripted policy through `TeacherForcing`, so their
token ids, loss masks and context restarts are exactly what an LM episode would carry; the
loss is the token-mean negative log-likelihood of the demonstrated replies (mask 1 tokens).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from harnessrl.episode import Episode
from harnessrl.harness.base import Harness
from harnessrl.policies.base import Policy
from harnessrl.policies.lm import LMPolicy, TeacherForcing, token_logprobs
from harnessrl.rollout.envs import open_env as default_open_env
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.train.sequences import build_batch, micro_batches


def demonstrations(policy: LMPolicy, teacher: Policy, harnesses: list[Harness], tasks: list[Any], *,
                   seeds: tuple[int, ...] = (0,), only_solved: bool = True, run_id: str = "sft-demos",
                   open_env: Callable[[Any, int], Any] = default_open_env) -> list[Episode]:
    """Episodes of `teacher` through each harness, tokenised as `policy` would have produced them."""
    items = [RolloutItem(h, t, s) for h in harnesses for t in tasks for s in seeds]
    episodes = run_group(TeacherForcing(teacher, policy), items, run_id=run_id, open_env=open_env)
    return [e for e in episodes if e.success or not only_solved]


def sft(policy: LMPolicy, episodes: list[Episode], *, epochs: int = 3, lr: float = 1e-3, batch_rows: int = 32,
        micro_batch_tokens: int = 32_768, max_grad_norm: float = 1.0, seed: int = 0,
        on_step: Callable[[int, float], None] | None = None) -> list[float]:
    """Token-mean NLL on the generated (mask 1) tokens. Returns the loss of every optimizer step."""
    if not episodes:
        raise ValueError("no demonstration episodes to fine-tune on")
    batch = build_batch(episodes, policy.pad_token_id)
    params = policy.trainable_parameters()
    from harnessrl.train.agent import adamw

    opt = adamw(params, lr=lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model, losses = policy.model, []
    model.train()
    B = batch.ids.shape[0]
    total_steps = epochs * ((B + batch_rows - 1) // batch_rows)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.05, 1.0 - s / max(1, total_steps)))
    for _ in range(epochs):
        for idx in torch.randperm(B, generator=gen).split(batch_rows):
            idx = idx.sort().values
            opt.zero_grad(set_to_none=True)
            whole = batch.mask[idx].sum().clamp(min=1)
            step_loss = 0.0
            for micro in micro_batches(batch, idx, micro_batch_tokens):
                mb = batch.rows(micro).to(policy.device)
                lp = token_logprobs(model, mb.ids, mb.attention, mb.mask, share_prefix=True).logprobs
                loss = -(lp * mb.mask).sum() / whole
                loss.backward()
                step_loss += float(loss.detach())
            torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
            opt.step()
            sched.step()
            losses.append(step_loss)
            if on_step:
                on_step(len(losses), step_loss)
    model.eval()
    return losses
