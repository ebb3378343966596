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
from typing import Any, NamedTuple

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


class _Live(NamedTuple):
    """A mask in the forms the diagnostics need, computed once per loss call (a tuple: cheap to make)."""

    weights: Tensor | None  # float mask, or None when every position counts
    count: Tensor  # number of counted positions, at least 1 (a divisor)
    flat: Tensor | None = None  # weights as one vector, for dot products

    @staticmethod
    def of(mask: Tensor | None, like: Tensor) -> "_Live":
        if mask is None:
            return _Live(None, like.new_tensor(float(max(like.numel(), 1))))
        return _Live(mask, mask.sum().clamp(min=1), mask.reshape(-1))

    def mean(self, x: Tensor) -> Tensor:
        if self.weights is None:
            return x.sum() / self.count
        return torch.dot(x.reshape(-1), self.flat) / self.count  # one fused multiply-sum


_MAX_LOG_RATIO = 20.0  # verl clamps the log-ratio at +-20 against overflow
_MAX_LOG_S = 10.0  # GSPO's sequence log-ratio is clamped at 10 (verl)


def _diagnostics(log_ratio: Tensor, ratio: Tensor, live: _Live, side: Tensor, bounds: "_Bounds", clip_live: _Live,
                 logits: Tensor | None, token_live: _Live | None, max_log_ratio: float = _MAX_LOG_RATIO
                 ) -> dict[str, Tensor]:
    """Ratio min/mean/max and approx KL over `live` (log-ratio clamped at max_log_ratio), clip
    fractions over `clip_live`, entropy over `token_live`.

    ratio = exp(log_ratio) as the clipped surrogate computed it (so no second exp); side = its
    clip signs (see _ClippedSurrogate).
    """
    with torch.no_grad():
        # One (B, T) temporary at a time, each freed before the next: a larger scratch buffer costs
        # fresh pages (page faults) on every call, more than the few extra dot products.
        mean_lr = live.mean(log_ratio.clamp(max=max_log_ratio))
        r = ratio.clamp(max=math.exp(max_log_ratio))  # == exp(clamped log r): exp is monotone
        ratio_mean = live.mean(r)
        # side > 0 only where the floor bit (A < 0); side < 0 where a cap bit. A > 0 positions have no
        # floor, so there side * pos is -1 exactly where they were clipped high; at A < 0 positions
        # the caps (dual clip, overflow) are the clipped ones that were not clipped low.
        low = clip_live.mean(side.clamp(min=0))
        minus_high = clip_live.mean(side * bounds.pos)
        minus_dual = clip_live.mean(side * bounds.neg) if bounds.dual is not None else None
        # Masked-out positions take the mean, which lies in [min, max] and so changes neither
        # (lerp with a 0/1 weight returns either end exactly); with no position counted all are 0.
        lo, hi = torch.aminmax(r if live.weights is None else torch.lerp(ratio_mean, r, live.weights, out=r))
        m = {
            "ratio_min": lo,
            "ratio_mean": ratio_mean,
            "ratio_max": hi,
            # Schulman's k3 estimate of KL(old || new) from samples of the old policy: E[(r - 1) - log r]
            "approx_kl": ratio_mean - mean_lr - 1.0,
        }
        if logits is not None:
            m["entropy"] = token_live.mean(entropy_from_logits(logits))
        m["clipfrac_low"], m["clipfrac_high"] = low, minus_high.neg()
        m["clipfrac"] = low - minus_high
        if minus_dual is not None:
            m["clipfrac_dual"] = low - minus_dual
    return m


def _broadcast_adv(advantages: Tensor, like: Tensor) -> Tensor:
    """(B, T) advantages as they are; (B,) as a (B, 1) view that broadcasts over tokens."""
    if advantages.shape == like.shape:
        return advantages
    if advantages.dim() == 1 and advantages.shape[0] == like.shape[0]:
        return advantages[:, None]
    raise ValueError(f"advantages have shape {tuple(advantages.shape)}; expected {tuple(like.shape)} or ({like.shape[0]},)")


class _Bounds:
    """PPO's clip range as bounds on the ratio, per sample (shaped like the advantages).

    A > 0: the ratio is capped at 1 + eps_high; A < 0: floored at 1 - eps_low and, with a dual
    clip c, capped at c; every ratio is capped at exp(max_log_ratio) against overflow.
    """

    def __init__(self, adv: Tensor, clip_low: float, clip_high: float, dual_clip: float | None, max_log_ratio: float):
        if not 0 < clip_low < 1 or clip_high <= 0:
            raise ValueError(f"clip range must satisfy 0 < clip_low < 1 and clip_high > 0; got {clip_low}, {clip_high}")
        if dual_clip is not None and dual_clip <= 1.0:
            raise ValueError(f"dual_clip must be > 1 (typically 3); got {dual_clip}")
        self.neg, self.pos = adv < 0, adv > 0
        max_ratio = math.exp(max_log_ratio)
        cap = min(dual_clip, max_ratio) if dual_clip is not None else max_ratio
        self.dual = dual_clip
        self.lower = torch.zeros_like(adv).masked_fill_(self.neg, 1.0 - clip_low)  # 0: no floor (a ratio is >= 0)
        self.upper = torch.full_like(adv, cap).masked_fill_(self.pos, min(1.0 + clip_high, max_ratio))


class _ClippedSurrogate(torch.autograd.Function):
    """PPO's pessimistic surrogate max(-A r, -A clip(r, 1-eps_low, 1+eps_high)), r = exp(log_ratio).

    The pessimistic max only ever caps r from the side where it helps: it equals -A clamp(r,
    lower, upper) with per-sample bounds (see _Bounds). Where the clamp bites, the loss is constant
    in log r; elsewhere d(-A r)/d log r = -A r, the loss itself. So the forward pass is a few
    elementwise float ops and saves one tensor; the backward pass is one multiply. Advantages are
    constants here, as in every policy-gradient objective. Also returns (no gradient) the ratio,
    for the diagnostics, and side = sign(clamp(r) - r): 1 clipped low, -1 clipped high, 0 inside.
    """

    @staticmethod
    def forward(ctx, log_ratio, adv, lower, upper):
        # In place where possible: every fresh (B, T) buffer may cost page faults.
        ratio = torch.exp(log_ratio)
        clamped = torch.maximum(ratio, lower)  # broadcast bounds: faster than clamp(tensor)
        torch.minimum(clamped, upper, out=clamped)
        side = torch.sub(clamped, ratio).sign_()
        loss = clamped.mul_(-adv)  # (forward runs without autograd: adv is a constant here)
        # loss * (1 - |side|): the loss where the clamp did not bite, else exactly 0
        inside = side.abs()
        ctx.save_for_backward(torch.addcmul(loss, loss, inside, value=-1.0, out=inside))
        ctx.mark_non_differentiable(side, ratio)
        ctx.set_materialize_grads(False)  # no zero-filled gradients for side and ratio
        return loss, side, ratio

    @staticmethod
    def backward(ctx, grad_loss, _side, _ratio):
        (coef,) = ctx.saved_tensors
        return grad_loss * coef, None, None, None


def _clipped(log_ratio: Tensor, adv: Tensor, clip_low: float, clip_high: float, dual_clip: float | None,
             max_log_ratio: float = _MAX_LOG_RATIO) -> tuple[Tensor, Tensor, Tensor, _Bounds]:
    """Per-element clipped loss (shaped like log_ratio), the clip signs, the ratio, the bounds."""
    bounds = _Bounds(adv, clip_low, clip_high, dual_clip, max_log_ratio)
    loss, side, ratio = _ClippedSurrogate.apply(log_ratio, adv, bounds.lower, bounds.upper)
    return loss, side, ratio, bounds


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
    # ratio capped at exp(20) against overflow; below exp(-20) it is ~0 either way (verl clamps both).
    loss, side, ratio, bounds = _clipped(log_ratio, adv, clip_low, clip_high, dual_clip)
    live = _Live.of(mask, log_prob)
    # token-mean is the diagnostics' masked mean: share its mask sum (the same sum over the same count)
    out = live.mean(loss) if agg == "token-mean" and mask is not None else aggregate(loss, mask, agg, norm)
    return LossOutput(out, lambda: _diagnostics(log_ratio, ratio, live, side, bounds, live, logits, live))


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
    return _token_mean_per_sequence(log_prob - old_log_prob, mask).clamp(max=_MAX_LOG_S)


def _token_mean_per_sequence(x: Tensor, mask: Tensor | None) -> Tensor:
    return x.mean(-1) if mask is None else (x * mask).sum(-1) / mask.sum(-1).clamp(min=1)


def _sequence_adv(advantages: Tensor, like: Tensor, mask: Tensor | None) -> Tensor:
    if advantages.dim() == 1:
        if advantages.shape[0] != like.shape[0]:
            raise ValueError(f"advantages have {advantages.shape[0]} entries for {like.shape[0]} sequences")
        return advantages
    return masked_mean(_broadcast_adv(advantages, like), mask, dim=-1)  # token-level input: its sequence mean


def _aggregate_sequences(seq_loss: Tensor, lengths: Tensor, seqs: _Live, mode: str, T: int,
                         norm: float | None) -> Tensor:
    """`aggregate` of a loss that is constant over each sequence's tokens, from (B,) values directly.
    seqs: the non-empty sequences."""
    AGGREGATIONS.get(mode)  # unknown names fail the same way as in `aggregate`
    if mode == "token-mean":
        return torch.dot(seq_loss, lengths) / lengths.sum().clamp(min=1)
    if mode == "seq-mean-token-mean":
        return seqs.mean(seq_loss)
    if mode == "seq-mean-token-sum":
        return torch.dot(seq_loss, lengths) / seqs.count
    return (seq_loss * lengths).sum() / (seq_loss.shape[0] * (T if norm is None else norm))


def _gspo(log_prob, old_log_prob, advantages, mask, clip_low, clip_high, agg, norm, logits, per_token: bool):
    mask = check_mask(mask, log_prob)
    diff = log_prob - old_log_prob
    B, T = log_prob.shape
    lengths = log_prob.new_full((B,), T) if mask is None else mask.sum(-1)
    seqs = _Live.of(lengths.sign(), lengths)  # 1 for the sequences that count (aggregation, diagnostics), else 0
    # (B,), as sequence_log_ratio but not yet clamped at 10
    log_s = diff.mul_(mask).sum(-1) / lengths.clamp(min=1) if mask is not None else diff.mean(-1)
    if per_token:
        # GSPO-token: the value of every token's ratio is s_i, its gradient flows through its own token.
        log_ratio = log_prob - log_prob.detach() + log_s.detach().clamp(max=_MAX_LOG_S)[:, None]
        loss, side, _, bounds = _clipped(log_ratio, _broadcast_adv(advantages, log_prob), clip_low, clip_high, None)
        out = aggregate(loss, mask, agg, norm)
    else:
        # s capped at exp(10) by the surrogate's overflow cap: the same loss and (zero) gradient beyond
        # it as clamping log s first, without a clamp in the autograd graph
        seq_loss, side, s, bounds = _clipped(log_s, _sequence_adv(advantages, log_prob, mask), clip_low, clip_high,
                                             None, _MAX_LOG_S)
        out = _aggregate_sequences(seq_loss, lengths, seqs, agg, T, norm)  # every token carries its sequence's loss

    def metrics() -> dict[str, Tensor]:
        token_live = _Live.of(mask, log_prob) if per_token or logits is not None else None
        # ratio and approx KL on GSPO's own ratio s_i (log s clamped at 10), averaged over sequences
        ratio = log_s.detach().exp() if per_token else s
        return _diagnostics(log_s, ratio, seqs, side, bounds, token_live if per_token else seqs, logits, token_live,
                            _MAX_LOG_S)

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
