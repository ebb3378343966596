"""Policy objectives and loss aggregation as pure tensor functions (value loss: rl/value.py).

Shapes: B = sequences (or samples), T = tokens (T = 1 for classic RL). log_prob and
old_log_prob are the per-token log-probabilities of the taken tokens/actions under the
current and the behaviour policy; mask is 1 on tokens that are trained on.

Registries (configs pick by name; names as in verl / TRL):
  POLICY_LOSSES  ppo | grpo | rloo (token-level clipped ratio), gspo (sequence ratio),
                 gspo_token (sequence ratio value, per-token gradient)
  AGGREGATIONS   token-mean | seq-mean-token-sum | seq-mean-token-mean | seq-mean-token-sum-norm
(KL estimators to a reference policy: rl/kl.py.)
Every policy loss returns a `LossOutput`: the scalar loss and detached diagnostics (clip
fractions low/high, approximate KL, ratio min/mean/max, entropy when logits are given).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from harnessrl.rl.masked import check_mask, masked_mean
from harnessrl.rl.registry import Registry

POLICY_LOSSES: Registry[Callable[..., "LossOutput"]] = Registry("policy loss")
AGGREGATIONS: Registry[Callable[..., Tensor]] = Registry("loss aggregation")

#: TRL GRPOConfig.loss_type -> the aggregation it performs.
TRL_LOSS_TYPES = {"grpo": "seq-mean-token-mean", "bnpo": "token-mean", "dr_grpo": "seq-mean-token-sum-norm", "dapo": "token-mean"}
#: The advantage estimator each objective is normally paired with (see rl.advantages.ADVANTAGES).
DEFAULT_ADVANTAGE = {"ppo": "gae", "grpo": "grpo", "rloo": "rloo", "gspo": "grpo", "gspo_token": "grpo"}


class LossOutput:
    """The scalar (differentiable) loss and its diagnostics (detached scalars).

    Diagnostics are computed on first access to `metrics`, so a trainer that logs only some
    minibatches pays for those alone.
    """

    __slots__ = ("loss", "_metrics")

    def __init__(self, loss: Tensor, metrics: dict[str, Tensor] | Callable[[], dict[str, Tensor]] | None = None):
        self.loss = loss
        self._metrics = {} if metrics is None else metrics

    @property
    def metrics(self) -> dict[str, Tensor]:
        if callable(self._metrics):
            self._metrics = self._metrics()
        return self._metrics


# ----------------------------------------------------------------------------------------
# Aggregation: (B, T) per-token losses -> scalar


@AGGREGATIONS.register("token-mean")
def token_mean(loss: Tensor, mask: Tensor | None, norm: float | None = None) -> Tensor:
    """sum(loss * mask) / sum(mask): every token weighs the same (TRL bnpo/dapo)."""
    return masked_mean(loss, mask)


@AGGREGATIONS.register("seq-mean-token-sum")
def seq_mean_token_sum(loss: Tensor, mask: Tensor | None, norm: float | None = None) -> Tensor:
    """Mean over non-empty sequences of each sequence's token sum."""
    per_seq = (loss if mask is None else loss * mask).sum(-1)
    return _mean_nonempty(per_seq, mask)


@AGGREGATIONS.register("seq-mean-token-mean")
def seq_mean_token_mean(loss: Tensor, mask: Tensor | None, norm: float | None = None) -> Tensor:
    """Mean over non-empty sequences of each sequence's token mean (TRL loss_type="grpo")."""
    if mask is None:
        return loss.mean()
    per_seq = (loss * mask).sum(-1) / mask.sum(-1).clamp(min=1)
    return _mean_nonempty(per_seq, mask)


@AGGREGATIONS.register("seq-mean-token-sum-norm")
def seq_mean_token_sum_norm(loss: Tensor, mask: Tensor | None, norm: float | None = None) -> Tensor:
    """sum(loss * mask) / (B * norm) with a constant norm (default T): Dr. GRPO's unbiased form."""
    B, T = loss.shape
    total = loss.sum() if mask is None else (loss * mask).sum()
    return total / (B * (T if norm is None else norm))


def _mean_nonempty(per_seq: Tensor, mask: Tensor | None) -> Tensor:
    if mask is None:
        return per_seq.mean()
    nonempty = (mask.sum(-1) > 0).to(per_seq.dtype)
    return (per_seq * nonempty).sum() / nonempty.sum().clamp(min=1)


def aggregate(loss: Tensor, mask: Tensor | None, mode: str = "token-mean", norm: float | None = None) -> Tensor:
    """Reduce per-token losses (B, T) to a scalar with the named aggregation."""
    return AGGREGATIONS.get(mode)(loss, mask, norm)


# ----------------------------------------------------------------------------------------
# Policy objectives


def entropy_from_logits(logits: Tensor) -> Tensor:
    """Entropy of softmax(logits) over the last dim: (..., V) -> (...)."""
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(-1)


@dataclass(frozen=True)
class _Live:
    """A mask in the forms the diagnostics need, computed once per loss call."""

    weights: Tensor | None  # float mask, or None when every position counts
    total: Tensor  # number of counted positions
    count: Tensor  # the same, at least 1 (a divisor)
    flat: Tensor | None = None  # weights as one vector, for dot products

    @staticmethod
    def of(mask: Tensor | None, like: Tensor) -> "_Live":
        if mask is None:
            n = like.new_tensor(float(like.numel()))
            return _Live(None, n, n.clamp(min=1))
        total = mask.sum()
        return _Live(mask, total, total.clamp(min=1), mask.reshape(-1))

    def mean(self, x: Tensor) -> Tensor:
        if self.weights is None:
            return x.sum() / self.count
        return torch.dot(x.reshape(-1), self.flat) / self.count  # one fused multiply-sum


def _ratio_metrics(log_ratio: Tensor, live: _Live, token_log_ratio: Tensor, token_live: _Live | None,
                   logits: Tensor | None) -> dict[str, Tensor]:
    """Ratio min/mean/max over `live` (from log-ratios: exp is monotone, so min/max come from the
    log-ratios' extremes); approx KL over `token_live` (`live` when token_log_ratio is log_ratio),
    entropy over `token_live` when logits are given."""
    with torch.no_grad():
        lr = log_ratio.clamp(max=_MAX_LOG_RATIO)
        mean_lr = live.mean(lr)
        # Masked-out positions take the mean, which lies in [min, max] and so changes neither
        # (lerp with a 0/1 weight returns either end exactly).
        lo, hi = torch.aminmax(lr if live.weights is None else torch.lerp(mean_lr.expand_as(lr), lr, live.weights))
        ratio_mean = live.mean(torch.exp(lr))
        if token_log_ratio is log_ratio:
            token_ratio_mean, token_mean_lr = ratio_mean, mean_lr
        else:
            tlr = token_log_ratio.clamp(max=_MAX_LOG_RATIO)
            token_ratio_mean, token_mean_lr = token_live.mean(torch.exp(tlr)), token_live.mean(tlr)
        some = live.total > 0  # an empty batch reports 0, not exp(the fill value)
        m = {
            "ratio_min": lo.exp() * some,
            "ratio_mean": ratio_mean,
            "ratio_max": hi.exp() * some,
            # Schulman's k3 estimate of KL(old || new) from samples of the old policy: E[(r - 1) - log r]
            "approx_kl": token_ratio_mean - token_mean_lr - 1.0,
        }
        if logits is not None:
            m["entropy"] = token_live.mean(entropy_from_logits(logits))
    return m


_MAX_LOG_RATIO = 20.0  # verl clamps the log-ratio at +-20 against overflow


def _broadcast_adv(advantages: Tensor, like: Tensor) -> Tensor:
    """(B, T) advantages as they are; (B,) as a (B, 1) view that broadcasts over tokens."""
    if advantages.shape == like.shape:
        return advantages
    if advantages.dim() == 1 and advantages.shape[0] == like.shape[0]:
        return advantages[:, None]
    raise ValueError(f"advantages have shape {tuple(advantages.shape)}; expected {tuple(like.shape)} or ({like.shape[0]},)")


class _Bounds:
    """PPO's clip range as bounds on the log-ratio, per sample (shaped like the advantages).

    A > 0: the ratio is capped at 1 + eps_high; A < 0: floored at 1 - eps_low and, with a dual
    clip c, capped at c; every ratio is capped at exp(max_log_ratio) against overflow.
    """

    def __init__(self, adv: Tensor, clip_low: float, clip_high: float, dual_clip: float | None, max_log_ratio: float):
        if not 0 < clip_low < 1 or clip_high <= 0:
            raise ValueError(f"clip range must satisfy 0 < clip_low < 1 and clip_high > 0; got {clip_low}, {clip_high}")
        if dual_clip is not None and dual_clip <= 1.0:
            raise ValueError(f"dual_clip must be > 1 (typically 3); got {dual_clip}")
        self.neg, self.pos = adv < 0, adv > 0
        cap = min(math.log(dual_clip), max_log_ratio) if dual_clip is not None else max_log_ratio
        self.dual = dual_clip
        self.lower = torch.full_like(adv, -math.inf).masked_fill_(self.neg, math.log(1.0 - clip_low))
        self.upper = torch.full_like(adv, cap).masked_fill_(self.pos, min(math.log(1.0 + clip_high), max_log_ratio))

    def fractions(self, side: Tensor, live: "_Live") -> tuple[Tensor, Tensor, Tensor | None]:
        """Shares of counted positions that PPO clipped low, high, and by the dual clip.

        side = clamp(log r) - log r: > 0 where the floor bit (only for A < 0: clipped low), < 0
        where a cap bit (A > 0: clipped high; A < 0: the dual clip or the overflow cap), 0 inside.
        Float arithmetic and dot products instead of boolean masks (several times cheaper)."""
        sign = torch.sign(side)
        low = live.mean(sign.clamp(min=0))
        capped = sign.neg_().clamp_(min=0)
        high = live.mean(capped * self.pos)
        dual = live.mean(capped * self.neg) if self.dual is not None else None
        return low, high, dual


class _ClippedSurrogate(torch.autograd.Function):
    """PPO's pessimistic surrogate max(-A r, -A clip(r, 1-eps_low, 1+eps_high)), r = exp(log_ratio).

    The pessimistic max only ever caps r from the side where it helps: it equals -A exp(clamp(log r,
    lower, upper)) with per-sample bounds (see _Bounds). Where the clamp bites, the loss is constant
    in log r; elsewhere d(-A r)/d log r = -A r, the loss itself. So the forward pass is a few
    elementwise float ops and saves one tensor; the backward pass is one multiply. Advantages are
    constants here, as in every policy-gradient objective. Also returns side = clamp(log r) - log r
    (no gradient) for the clip diagnostics.
    """

    @staticmethod
    def forward(ctx, log_ratio, adv, lower, upper):
        clamped = torch.minimum(torch.maximum(log_ratio, lower), upper)  # broadcast bounds: faster than clamp(tensor)
        loss = torch.exp(clamped).mul_(-adv.detach())
        side = clamped.sub_(log_ratio)
        inside = torch.sign(side.abs()).neg_().add_(1.0)  # 1 where the clamp did not bite, else 0
        ctx.save_for_backward(inside.mul_(loss))
        ctx.mark_non_differentiable(side)
        return loss, side

    @staticmethod
    def backward(ctx, grad_loss, _):
        (coef,) = ctx.saved_tensors
        return grad_loss * coef, None, None, None


def _clipped(log_ratio: Tensor, adv: Tensor, clip_low: float, clip_high: float, dual_clip: float | None,
             max_log_ratio: float = _MAX_LOG_RATIO) -> tuple[Tensor, Tensor, _Bounds]:
    """Per-element clipped loss (shaped like log_ratio), the clamp's side (see _Bounds.fractions), the bounds."""
    bounds = _Bounds(adv, clip_low, clip_high, dual_clip, max_log_ratio)
    loss, side = _ClippedSurrogate.apply(log_ratio, adv, bounds.lower, bounds.upper)
    return loss, side, bounds


@POLICY_LOSSES.register("ppo")
def ppo_loss(
    log_prob: Tensor,
    old_log_prob: Tensor,
    advantages: Tensor,
    mask: Tensor | None = None,
    *,
    clip_low: float = 0.2,
    clip_high: float | None = None,
    dual_clip: float | None = None,
    agg: str = "token-mean",
    norm: float | None = None,
    logits: Tensor | None = None,
) -> LossOutput:
    """PPO-clip on the token-level ratio r_t = pi/pi_old: max(-A r, -A clip(r, 1-eps_low, 1+eps_high)).

    log_prob, old_log_prob, mask: (B, T); advantages: (B, T) or (B,) broadcast over tokens.
    clip_high None = clip_low (symmetric). dual_clip c > 1 bounds the loss of A < 0 tokens
    by -c A (Ye et al. 2020). logits: (B, T, V), only for the entropy diagnostic.
    """
    mask = check_mask(mask, log_prob)
    clip_high = clip_low if clip_high is None else clip_high
    adv = _broadcast_adv(advantages, log_prob)
    log_ratio = log_prob - old_log_prob
    # log-ratio capped at 20 against overflow; below -20 the ratio is ~0 either way (verl clamps both).
    loss, side, bounds = _clipped(log_ratio, adv, clip_low, clip_high, dual_clip)

    def metrics() -> dict[str, Tensor]:
        live = _Live.of(mask, log_prob)
        lr = log_ratio.detach()
        m = _ratio_metrics(lr, live, lr, live, logits)
        with torch.no_grad():
            low, high, dual = bounds.fractions(side, live)
            m["clipfrac_low"], m["clipfrac_high"], m["clipfrac"] = low, high, low + high
            if dual is not None:
                m["clipfrac_dual"] = dual
        return m

    return LossOutput(aggregate(loss, mask, agg, norm), metrics)


@POLICY_LOSSES.register("grpo")
def grpo_loss(log_prob: Tensor, old_log_prob: Tensor, advantages: Tensor, mask: Tensor | None = None, *,
              clip_low: float = 0.2, clip_high: float | None = None, dual_clip: float | None = None,
              agg: str = "token-mean", norm: float | None = None, logits: Tensor | None = None) -> LossOutput:
    """GRPO: the token-level clipped objective with group-relative advantages (shapes as `ppo_loss`)."""
    return ppo_loss(log_prob, old_log_prob, advantages, mask, clip_low=clip_low, clip_high=clip_high,
                    dual_clip=dual_clip, agg=agg, norm=norm, logits=logits)


POLICY_LOSSES.register("rloo")(grpo_loss)


def sequence_log_ratio(log_prob: Tensor, old_log_prob: Tensor, mask: Tensor | None) -> Tensor:
    """log s_i = mean over the sequence's tokens of (log pi - log pi_old), clamped at 10 (verl). (B,)."""
    return _token_mean_per_sequence(log_prob - old_log_prob, mask).clamp(max=10.0)


def _token_mean_per_sequence(x: Tensor, mask: Tensor | None) -> Tensor:
    return x.mean(-1) if mask is None else (x * mask).sum(-1) / mask.sum(-1).clamp(min=1)


def _sequence_adv(advantages: Tensor, like: Tensor, mask: Tensor | None) -> Tensor:
    if advantages.dim() == 1:
        if advantages.shape[0] != like.shape[0]:
            raise ValueError(f"advantages have {advantages.shape[0]} entries for {like.shape[0]} sequences")
        return advantages
    return masked_mean(_broadcast_adv(advantages, like), mask, dim=-1)  # token-level input: its sequence mean


def _aggregate_sequences(seq_loss: Tensor, lengths: Tensor, mode: str, T: int, norm: float | None) -> Tensor:
    """`aggregate` of a loss that is constant over each sequence's tokens, from (B,) values directly."""
    AGGREGATIONS.get(mode)  # unknown names fail the same way as in `aggregate`
    nonempty = (lengths > 0).to(seq_loss.dtype)
    if mode == "token-mean":
        return (seq_loss * lengths).sum() / lengths.sum().clamp(min=1)
    if mode == "seq-mean-token-mean":
        return (seq_loss * nonempty).sum() / nonempty.sum().clamp(min=1)
    if mode == "seq-mean-token-sum":
        return (seq_loss * lengths).sum() / nonempty.sum().clamp(min=1)
    return (seq_loss * lengths).sum() / (seq_loss.shape[0] * (T if norm is None else norm))


def _gspo(log_prob, old_log_prob, advantages, mask, clip_low, clip_high, agg, norm, logits, per_token: bool):
    mask = check_mask(mask, log_prob)
    diff = log_prob - old_log_prob
    B, T = log_prob.shape
    lengths = log_prob.new_full((B,), T) if mask is None else mask.sum(-1)
    # (B,), as sequence_log_ratio
    log_s = ((diff * mask).sum(-1) / lengths.clamp(min=1) if mask is not None else diff.mean(-1)).clamp(max=10.0)
    if per_token:
        # GSPO-token: the value of every token's ratio is s_i, its gradient flows through its own token.
        log_ratio = log_prob - log_prob.detach() + log_s.detach()[:, None]
        loss, side, bounds = _clipped(log_ratio, _broadcast_adv(advantages, log_prob), clip_low, clip_high, None, 10.0)
        out = aggregate(loss, mask, agg, norm)
    else:
        seq_loss, side, bounds = _clipped(log_s, _sequence_adv(advantages, log_prob, mask), clip_low, clip_high, None, 10.0)
        out = _aggregate_sequences(seq_loss, lengths, agg, T, norm)  # every token carries its sequence's loss

    def metrics() -> dict[str, Tensor]:
        with torch.no_grad():
            token_live = _Live.of(mask, log_prob) if per_token or logits is not None else None
            seq_live = _Live.of((lengths > 0).to(log_prob.dtype), lengths)
            ls = log_s.detach()  # approx KL on GSPO's own ratio s_i: k3 averaged over sequences
            m = _ratio_metrics(ls, seq_live, ls, token_live, logits)
            low, high, _ = bounds.fractions(side, token_live if per_token else seq_live)
            m["clipfrac_low"], m["clipfrac_high"], m["clipfrac"] = low, high, low + high
        return m

    return LossOutput(out, metrics)


@POLICY_LOSSES.register("gspo")
def gspo_loss(log_prob: Tensor, old_log_prob: Tensor, advantages: Tensor, mask: Tensor | None = None, *,
              clip_low: float = 3e-4, clip_high: float | None = 4e-4, dual_clip: float | None = None,
              agg: str = "seq-mean-token-mean", norm: float | None = None, logits: Tensor | None = None) -> LossOutput:
    """GSPO (Zheng et al. 2025): s_i = exp(mean_t log-ratio); loss_i = max(-A_i s_i, -A_i clip(s_i, 1-eps_low, 1+eps_high)).

    log_prob, old_log_prob, mask: (B, T); advantages: (B,) (a (B, T) input is reduced to its
    per-sequence mean). Each token carries its sequence's loss, so the default aggregation
    gives the paper's (1/G) sum_i. Ratio, clip and approx-KL diagnostics are per sequence (on
    s_i: approx_kl = mean_i (s_i - 1 - log s_i)). GSPO has no dual clip: dual_clip must stay None.
    """
    if dual_clip is not None:
        raise ValueError("GSPO has no dual clip; leave dual_clip unset")
    clip_high = clip_low if clip_high is None else clip_high
    return _gspo(log_prob, old_log_prob, advantages, mask, clip_low, clip_high, agg, norm, logits, per_token=False)


@POLICY_LOSSES.register("gspo_token")
def gspo_token_loss(log_prob: Tensor, old_log_prob: Tensor, advantages: Tensor, mask: Tensor | None = None, *,
                    clip_low: float = 3e-4, clip_high: float | None = 4e-4, dual_clip: float | None = None,
                    agg: str = "seq-mean-token-mean", norm: float | None = None,
                    logits: Tensor | None = None) -> LossOutput:
    """GSPO-token: ratio value sg[s_i] * pi(y_t)/sg[pi(y_t)], so token-level advantages (B, T) are
    allowed; with a constant per-sequence advantage it equals `gspo_loss` in value and gradient."""
    if dual_clip is not None:
        raise ValueError("GSPO has no dual clip; leave dual_clip unset")
    clip_high = clip_low if clip_high is None else clip_high
    return _gspo(log_prob, old_log_prob, advantages, mask, clip_low, clip_high, agg, norm, logits, per_token=True)


def policy_loss(name: str, *args: Any, **kwargs: Any) -> LossOutput:
    """Call the registered policy loss `name` (ppo, grpo, rloo, gspo, gspo_token)."""
    return POLICY_LOSSES.get(name)(*args, **kwargs)
