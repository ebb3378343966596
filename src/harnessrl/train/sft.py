"""Supervised warm start of an LM on demonstration episodes (e.g. an oracle through one harness).

    demos = demonstrations(policy, Oracle(), harness, tasks)      # episodes with the LM's token layout
    losses = sft(policy, demos, epochs=3, lr=1e-3)

Demonstrations are produced by running a scripted policy through `TeacherForcing`, so their
token ids, loss masks and context restarts are exactly what an LM episode would carry; the
loss is the token-mean negative log-likelihood of the demonstrated replies (mask 1 tokens).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harnessrl.episode import Episode
from harnessrl.harness.base import Harness
from harnessrl.harness.base import make_harness
from harnessrl.policies.base import Action, AgentState, Policy
from harnessrl.policies.lm import LMConfig, LMPolicy, TeacherForcing, token_logprobs
from harnessrl.rollout.envs import open_env as default_open_env
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.tasks.contract import TaskLike
from harnessrl.train.sequences import build_batch, micro_batches
from harnessrl.train.tasks import check_trainable


def demonstrations(policy: LMPolicy, teacher: Policy, harnesses: list[Harness], tasks: list[TaskLike], *,
                   seeds: tuple[int, ...] = (0,), only_solved: bool = True, run_id: str = "sft-demos",
                   open_env: Callable[[Any, int], Any] = default_open_env, seals_dir: str | Path | None = None
                   ) -> list[Episode]:
    """Episodes of `teacher` through each harness, tokenised as `policy` would have produced them.

    Demonstrations are training data: a sealed task or harness (evaluate.seal, in `seals_dir`) is
    refused before any episode runs, exactly as the RL trainer refuses it."""
    check_trainable(tasks, harnesses, str(seals_dir) if seals_dir else None)
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


# ----------------------------------------------------------------------------------------
# A model to start from: a given path, or a tiny LM built here, then a warm start on demos


class _Recorder(Policy):
    """Runs another policy and keeps every text the conversation shows (a tokenizer's corpus)."""

    def __init__(self, inner: Policy):
        self.inner, self.texts, self.policy_id = inner, [], inner.policy_id
        self.privileged = inner.privileged  # the teacher (an oracle) keeps its channel

    def act(self, states: list[AgentState]) -> list[Action]:
        actions = self.inner.act(states)
        for s, a in zip(states, actions):
            self.texts += [m["content"] for m in s.messages[-2:] if m["role"] != "assistant"] + [a.text]
        return actions


def build_tiny_for(out: Path, teacher: Policy, harness_ids: list[str], tasks: list[TaskLike], *, size: str = "micro",
                   vocab_size: int = 1024, max_positions: int = 512) -> str:
    """A tiny LM whose tokenizer saw the text of `teacher` acting through these harnesses (idempotent)."""
    from harnessrl.policies.tiny import build_tiny_lm

    if (out / "config.json").exists():
        return str(out)
    rec = _Recorder(teacher)
    harnesses = [make_harness(h) for h in dict.fromkeys(harness_ids)]
    run_group(rec, [RolloutItem(h, t, s) for h in harnesses for t in tasks for s in range(2)])
    build_tiny_lm(out, rec.texts, size=size, vocab_size=vocab_size, max_positions=max_positions)
    return str(out)


def warm_start(out: Path, policy_cfg: LMConfig, teacher: Policy, harness_id: str, tasks: list[TaskLike], *,
               seeds: int, epochs: int, lr: float, batch_rows: int, micro_batch_tokens: int = 32_768,
               progress: Callable[[str, int, int | None], None] = lambda *a: None,
               seals_dir: str | Path | None = None) -> tuple[str, dict[str, Any]]:
    """SFT on `teacher`'s demonstrations through ONE harness; saves the merged model to `out`.

    Idempotent: a finished warm start (out/sft.json) is reused. Returns (model path, info).
    """
    info_path = out / "sft.json"
    if info_path.exists():
        return str(out), json.loads(info_path.read_text())
    t0 = time.perf_counter()
    policy = LMPolicy.from_config(policy_cfg)
    demos = demonstrations(policy, teacher, [make_harness(harness_id)], tasks, seeds=tuple(range(seeds)), seals_dir=seals_dir)
    steps = epochs * -(-len(demos) // batch_rows)
    losses = sft(policy, demos, epochs=epochs, lr=lr, batch_rows=batch_rows, micro_batch_tokens=micro_batch_tokens,
                 on_step=lambda i, loss: progress("SFT steps", i, steps))
    policy.save_merged(out)
    info = {"harness": harness_id, "demonstrations": len(demos),
            "demo_tokens": int(sum(len(t.token_ids) for e in demos for t in e.turns)),
            "steps": len(losses), "loss_first": losses[0], "loss_last": losses[-1], "losses": losses,
            "seconds": time.perf_counter() - t0, "parameters": sum(p.numel() for p in policy.model.parameters())}
    info_path.write_text(json.dumps(info))
    return str(out), info
