"""One policy update of an LM on a token batch: old log-probs, advantages per token, the
objective (grpo | gspo | gspo_token | rloo | ppo + critic), KL to the reference, micro-batched
backward passes that add up to exactly the full-minibatch loss.

Reads top to bottom in the order an update runs:
  1. `score_batch`   no-grad pass: pi_old log-probs, entropy, reference log-probs, critic features
  2. `token_advantages`  per-token advantages (group-relative broadcast, or GAE from the critic)
  3. `update`        epochs x minibatches x micro-batches of loss.backward(), clip, step
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from harnessrl.policies.lm import LMPolicy, token_logprobs
from harnessrl.rl.advantages import gae
from harnessrl.rl.kl import kl_loss, kl_penalty
from harnessrl.rl.losses import AGGREGATIONS
from harnessrl.rl.objectives import OBJECTIVES
from harnessrl.rl.value import value_loss
from harnessrl.rl.masked import masked_mean, masked_whiten
from harnessrl.train.sequences import TokenBatch, micro_batches


@dataclass
class Scored:
    old: torch.Tensor | None  # (B, T) pi_old log-probs; None = on-policy: the training pass's own, detached
    entropy: torch.Tensor | None  # (B, T)
    ref: torch.Tensor | None  # (B, T) reference log-probs
    values: torch.Tensor | None  # (B, T) critic values (ppo)


def _features_to_tokens(mask: torch.Tensor, flat: torch.Tensor) -> torch.Tensor:
    out = flat.new_zeros(mask.shape)
    out[mask.bool()] = flat
    return out


@torch.no_grad()
def score_batch(policy: LMPolicy, batch: TokenBatch, micro_tokens: int, *, with_ref: bool,
                critic: torch.nn.Module | None = None, context: torch.Tensor | None = None,
                need_old: bool = True) -> Scored:
    """pi_old (eval mode: no dropout), entropy, reference and critic values for every row.

    need_old=False (one on-policy step: pi_old is the weights being trained, so the ratio is 1
    and its value is the training pass's own log-prob, detached) skips this pass entirely
    when neither a reference nor a critic is needed — as TRL does for num_iterations=1.
    """
    if not need_old and not with_ref and critic is None:
        return Scored(None, None, None, None)
    model, T = policy.model, policy.cfg.temperature or 1.0
    was = model.training
    model.eval()
    B, W = batch.ids.shape
    old, ent = torch.zeros(B, W), torch.zeros(B, W)
    ref = torch.zeros(B, W) if with_ref else None
    values = torch.zeros(B, W) if critic is not None else None
    try:
        for idx in micro_batches(batch, torch.arange(B), micro_tokens):
            mb = batch.rows(idx).to(policy.device)
            s = token_logprobs(model, mb.ids, mb.attention, mb.mask, T, with_entropy=True, with_hidden=critic is not None,
                               share_prefix=True)
            w = mb.ids.shape[1]
            old[idx, :w], ent[idx, :w] = s.logprobs.float().cpu(), s.entropy.float().cpu()
            if critic is not None:
                ctx = context[idx].to(policy.device).repeat_interleave(mb.mask.sum(-1).long())
                v = critic(s.hidden.float(), ctx)
                values[idx, :w] = _features_to_tokens(mb.mask, v).cpu()
            if with_ref:
                with policy.reference() as r:
                    ref[idx, :w] = token_logprobs(r, mb.ids, mb.attention, mb.mask, T, share_prefix=True).logprobs.float().cpu()
    finally:
        model.train(was)
    return Scored(old, ent, ref, values)


def token_advantages(objective: str, seq_adv: torch.Tensor | None, batch: TokenBatch, rewards: torch.Tensor,
                     scored: Scored, gamma: float = 1.0, lam: float = 0.95) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(advantages (B, T), returns (B, T) or None). Group objectives: the episode's advantage on
    each of its tokens. PPO: GAE over generated tokens with the episode reward on its last token."""
    mask = batch.mask
    if not OBJECTIVES.get(objective).critic:
        return seq_adv[batch.episode][:, None] * mask, None
    token_rewards = torch.zeros_like(mask)
    last_row: dict[int, int] = {}
    for b, e in enumerate(batch.episode.tolist()):
        last_row[e] = b  # rows of an episode are in order: the last one ends it
    for e, b in last_row.items():
        t = int(mask[b].nonzero().max())
        token_rewards[b, t] = rewards[e]
    adv, returns = gae(token_rewards, scored.values, mask, gamma=gamma, lam=lam)
    return masked_whiten(adv, mask), returns


def update(policy: LMPolicy, optimizer: torch.optim.Optimizer, scheduler: Any, batch: TokenBatch,
           scored: Scored, adv: torch.Tensor, *, objective: str, clip: tuple[float, float], agg: str,
           kl_coef: float, kl_estimator: str, epochs: int, minibatches: int, micro_tokens: int,
           max_grad_norm: float, generator: torch.Generator, critic: torch.nn.Module | None = None,
           context: torch.Tensor | None = None, returns: torch.Tensor | None = None, vf_coef: float = 0.5,
           vf_clip: float | None = 0.2, old_for_ratio: torch.Tensor | None = None,
           dual_clip: float | None = None) -> dict[str, float]:
    """Epochs x minibatches of optimizer steps. Returns the metrics averaged over steps.

    adv: (B, T) per-token advantages (already importance-weighted for offline data).
    old_for_ratio: log-probs the ratio is taken against (default pi_old = scored.old).
    """
    model, T = policy.model, policy.cfg.temperature or 1.0
    obj, share = OBJECTIVES.get(objective), AGGREGATIONS.get(agg).share
    params = policy.trainable_parameters() + (list(critic.parameters()) if critic is not None else [])
    old = scored.old if old_for_ratio is None else old_for_ratio
    norm = float(batch.attention.sum(-1).max())
    B = batch.ids.shape[0]
    sums: dict[str, float] = {}
    steps = 0
    model.train()
    for _ in range(epochs):
        order = torch.randperm(B, generator=generator)
        for mb_idx in order.chunk(minibatches):
            mb_idx = mb_idx.sort().values  # rows of a group stay adjacent, so micro-batches share their prompts
            optimizer.zero_grad(set_to_none=True)
            whole = batch.mask[mb_idx]
            stats: dict[str, float] = {}
            for idx in micro_batches(batch, mb_idx, micro_tokens):
                mb = batch.rows(idx).to(policy.device)
                w = mb.ids.shape[1]
                wt = share(batch.mask[idx], whole)
                s = token_logprobs(model, mb.ids, mb.attention, mb.mask, T, with_entropy=old is None,
                                   with_hidden=critic is not None, share_prefix=True)
                lp = s.logprobs
                dev = lambda x: x[idx, :w].to(lp.device)  # noqa: E731
                old_mb = lp.detach() if old is None else dev(old)
                out = obj.loss(lp, old_mb, _seq(dev(adv), mb.mask) if obj.sequence_advantage else dev(adv), mb.mask,
                               clip_low=clip[0], clip_high=clip[1], agg=agg, norm=norm, dual_clip=dual_clip)
                if s.entropy is not None:
                    _acc(stats, {"entropy": masked_mean(s.entropy.detach(), mb.mask)}, wt)
                loss = out.loss
                if scored.ref is not None:
                    kl = masked_mean(kl_penalty(lp.detach(), dev(scored.ref), kl_estimator), mb.mask)
                    _acc(stats, {"kl": kl}, wt)
                    if kl_coef:
                        loss = loss + kl_coef * kl_loss(lp, dev(scored.ref), mb.mask, kl_estimator, agg, norm).loss
                if critic is not None:
                    ctx = context[idx].to(lp.device).repeat_interleave(mb.mask.sum(-1).long())
                    v = _features_to_tokens(mb.mask, critic(s.hidden.detach().float(), ctx))
                    vl = value_loss(v, dev(returns), mb.mask, old_values=dev(scored.values), clip=vf_clip)
                    loss = loss + vf_coef * vl.loss
                    _acc(stats, {"value_loss": vl.loss.detach(), **vl.metrics}, wt)
                (loss * wt).backward()
                _acc(stats, {"loss": loss.detach(), "policy_loss": out.loss.detach(), **out.metrics}, wt)
            grad_norm = torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
            optimizer.step()
            scheduler.step()
            stats["grad_norm"] = float(grad_norm)
            for k, v in stats.items():
                sums[k] = sums.get(k, 0.0) + v
            steps += 1
    return {k: v / max(steps, 1) for k, v in sums.items()}


def _seq(adv_tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """An objective with one advantage per sequence (GSPO) takes the mean over its trained tokens."""
    return masked_mean(adv_tokens, mask, dim=-1)


def _acc(stats: dict[str, float], values: dict[str, torch.Tensor], weight: float) -> None:
    for k, v in values.items():
        stats[k] = stats.get(k, 0.0) + float(v) * weight
