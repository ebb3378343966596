"""One policy update of an LM on a token batch: old log-probs, advantages per token, the
objective (grpo | gspo | gspo_token | rloo | ppo + critic), KL to the reference, micro-batched
backward passes that add up to exactly the full-minibatch loss.

Reads top to bottom in the order an update runs:
  1. `score_batch`   no-grad pass: pi_old log-probs, entropy, reference log-probs, critic features
  2. `token_advantages`  per-token advantages (group-relative broadcast, or GAE from the critic)
  3. `update`        epochs x minibatches x micro-batches of loss.backward(), clip, step, as
                     `UpdateSettings` say
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
from harnessrl.rl.tis import truncated_is_weights
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


@dataclass(frozen=True)
class UpdateSettings:
    """What an update does with its batch: the objective and its loss settings (clip range,
    aggregation, dual clip, KL weight and estimator, value-loss weight and clip for a critic),
    the batch shape (epochs x minibatches of optimizer steps, micro-batches of at most
    `micro_tokens` padded tokens) and the gradient clip."""

    objective: str = "grpo"
    clip: tuple[float, float] = (0.2, 0.28)
    agg: str = "token-mean"
    dual_clip: float | None = None
    kl_coef: float = 0.0
    kl_estimator: str = "k3"
    epochs: int = 1
    minibatches: int = 1
    micro_tokens: int = 32_768
    max_grad_norm: float = 1.0
    vf_coef: float = 0.5
    vf_clip: float | None = 0.2
    sampler_tis_cap: float | None = None  # TIS against the sampler's recorded log-probs (rl/tis.py); None = off


def update(policy: LMPolicy, optimizer: torch.optim.Optimizer, scheduler: Any, batch: TokenBatch, scored: Scored,
           adv: torch.Tensor, settings: UpdateSettings, generator: torch.Generator, *,
           critic: torch.nn.Module | None = None, context: torch.Tensor | None = None,
           returns: torch.Tensor | None = None, old_for_ratio: torch.Tensor | None = None) -> dict[str, float]:
    """Epochs x minibatches of optimizer steps. Returns the metrics averaged over steps.

    adv: (B, T) per-token advantages (already importance-weighted for offline data).
    critic, context (B,) harness index, returns (B, T): a critic objective's value head and targets.
    old_for_ratio: log-probs the ratio is taken against (default pi_old = scored.old).
    """
    st = settings
    model, T = policy.model, policy.cfg.temperature or 1.0
    obj, share = OBJECTIVES.get(st.objective), AGGREGATIONS.get(st.agg).share
    params = policy.trainable_parameters() + (list(critic.parameters()) if critic is not None else [])
    old = scored.old if old_for_ratio is None else old_for_ratio
    norm = float(batch.attention.sum(-1).max())
    B = batch.ids.shape[0]
    sums: dict[str, float] = {}
    steps = 0
    model.train()
    for _ in range(st.epochs):
        order = torch.randperm(B, generator=generator)
        for mb_idx in order.chunk(st.minibatches):
            mb_idx = mb_idx.sort().values  # rows of a group stay adjacent, so micro-batches share their prompts
            optimizer.zero_grad(set_to_none=True)
            whole = batch.mask[mb_idx]
            logged: list[tuple[dict[str, torch.Tensor], float]] = []  # read to host once per step, not per micro-batch
            for idx in micro_batches(batch, mb_idx, st.micro_tokens):
                mb = batch.rows(idx).to(policy.device)
                w = mb.ids.shape[1]
                wt = share(batch.mask[idx], whole)
                s = token_logprobs(model, mb.ids, mb.attention, mb.mask, T, with_entropy=old is None,
                                   with_hidden=critic is not None, share_prefix=True)
                lp = s.logprobs
                dev = lambda x: x[idx, :w].to(lp.device)  # noqa: E731
                old_mb = lp.detach() if old is None else dev(old)
                adv_mb = dev(adv)
                if st.sampler_tis_cap is not None:  # sampler and trainer computed differently: reweigh to pi_train_old
                    w_tis, tis_metrics = truncated_is_weights(old_mb, dev(batch.behaviour), mb.mask, st.sampler_tis_cap,
                                                              "sequence" if obj.sequence_advantage else "token")
                    adv_mb = adv_mb * w_tis
                    logged.append((tis_metrics, wt))
                out = obj.loss(lp, old_mb, _seq(adv_mb, mb.mask) if obj.sequence_advantage else adv_mb, mb.mask,
                               clip_low=st.clip[0], clip_high=st.clip[1], agg=st.agg, norm=norm, dual_clip=st.dual_clip)
                if s.entropy is not None:
                    logged.append(({"entropy": masked_mean(s.entropy.detach(), mb.mask)}, wt))
                loss = out.loss
                if scored.ref is not None:
                    kl = masked_mean(kl_penalty(lp.detach(), dev(scored.ref), st.kl_estimator), mb.mask)
                    logged.append(({"kl": kl}, wt))
                    if st.kl_coef:
                        loss = loss + st.kl_coef * kl_loss(lp, dev(scored.ref), mb.mask, st.kl_estimator, st.agg, norm).loss
                if critic is not None:
                    ctx = context[idx].to(lp.device).repeat_interleave(mb.mask.sum(-1).long())
                    v = _features_to_tokens(mb.mask, critic(s.hidden.detach().float(), ctx))
                    vl = value_loss(v, dev(returns), mb.mask, old_values=dev(scored.values), clip=st.vf_clip)
                    loss = loss + st.vf_coef * vl.loss
                    logged.append(({"value_loss": vl.loss.detach(), **vl.metrics}, wt))
                (loss * wt).backward()
                logged.append(({"loss": loss.detach(), "policy_loss": out.loss.detach(), **out.metrics}, wt))
            grad_norm = torch.nn.utils.clip_grad_norm_(params, st.max_grad_norm)
            optimizer.step()
            scheduler.step()
            stats = _weighted_sums(logged)
            stats["grad_norm"] = float(grad_norm)
            for k, v in stats.items():
                sums[k] = sums.get(k, 0.0) + v
            steps += 1
    return {k: v / max(steps, 1) for k, v in sums.items()}


def _seq(adv_tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """An objective with one advantage per sequence (GSPO) takes the mean over its trained tokens."""
    return masked_mean(adv_tokens, mask, dim=-1)


def _weighted_sums(logged: list[tuple[dict[str, torch.Tensor], float]]) -> dict[str, float]:
    """sum over micro-batches of value x share, per name, with one read of all values to the host."""
    flat = [v for values, _ in logged for v in values.values()]
    host = torch.stack([v.detach().reshape(()).double() for v in flat]).tolist() if flat else []
    stats: dict[str, float] = {}
    i = 0
    for values, weight in logged:
        for k in values:
            stats[k] = stats.get(k, 0.0) + host[i] * weight
            i += 1
    return stats
