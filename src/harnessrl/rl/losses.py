"""Policy objectives and loss aggregation as pure tensor functions (value loss: rl/value.py,
KL to a reference: rl/kl.py).

Shapes: B = sequences (or samples), T = tokens (T = 1 for classic RL). log_prob and old_log_prob
are the per-token log-probabilities of the taken tokens/actions under the current and the
behaviour policy; mask is 1 on tokens that are trained on.

Registries (configs pick by name; names as in verl / TRL):
  POLICY_LOSSES  ppo | grpo | rloo (token-level clipped ratio), gspo (sequence ratio),
                 gspo_token (sequence ratio value, per-token gradient)
  AGGREGATIONS   token-mean | seq-mean-token-sum | seq-mean-token-mean | seq-mean-token-sum-norm
                 (each an `Aggregation`: per token, per sequence, and its micro-batch share)
What each objective needs besides its loss (default clip, aggregation, advantage, TRL mapping)
is declared once in rl/objectives.py.

Conventions, where TRL and verl differ:
  - log-ratio clamp: log(pi/pi_old) is clamped to [-20, 20] before exp (verl; TRL does not clamp),
    and GSPO's sequence log-ratio at 10 (verl; TRL does not clamp). Beyond a clamp the gradient is 0.
  - empty rows: the seq-mean aggregations average over sequences with at least one masked-in
    token (verl). TRL's loss_type="grpo" averages over all B rows, an empty row counting as 0.
  - dual clip: off unless asked for (TRL: delta=None); verl's vanilla loss always applies its
    clip_ratio_c = 3.
  - defaults that both share: PPO/GRPO clip 0.2 on both sides, token-mean aggregation (TRL's
    default loss_type "dapo", verl's default loss_agg_mode); GSPO clip (3e-4, 4e-4) with
    seq-mean-token-mean, as in the GSPO paper and the TRL and verl GSPO recipes.
Every policy loss returns a `LossOutput`: the scalar loss and detached diagnostics (clip fractions
low/high, approximate KL, ratio min/mean/max, entropy when logits are given).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from harnessrl.rl.masked import check_mask, masked_mean
from harnessrl.rl.registry import Registry

POLICY_LOSSES: Registry[Callable[..., "LossOutput"]] = Registry("policy loss")
AGGREGATIONS: Registry["Aggregation"] = Registry("loss aggregation")

#: TRL GRPOConfig.loss_type -> the aggregation it performs.
TRL_LOSS_TYPES = {"grpo": "seq-mean-token-mean", "bnpo": "token-mean", "dr_grpo": "seq-mean-token-sum-norm", "dapo": "token-mean"}

MAX_LOG_RATIO = 20.0  # verl clamps the token log-ratio to [-20, 20] against overflow
MAX_LOG_S = 10.0  # and GSPO's sequence log-ratio at 10


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
# Aggregation: (B, T) per-token losses -> scalar. Each mode is one table row with its three
# forms, so a mode registered here is computed as itself everywhere (never as another's).


@dataclass(frozen=True)
class Aggregation:
    """One aggregation mode.

    tokens(loss (B, T), mask (B, T) | None, norm) -> scalar: the mode itself.
    sequences(seq_loss (B,), n (B,), nonempty (B,), T, norm) -> scalar: the same value for a loss
        every token of a sequence carries alike, from its (B,) values; n = masked-in tokens per
        sequence, nonempty = (n > 0) as 0/1.
    share(micro_mask (b, T), whole_mask (B, T)) -> float: the part of a minibatch's loss that a
        micro-batch of its rows carries, so that micro-batch losses times their shares add up
        exactly to the minibatch loss (train/lm_update.py).
    """

    tokens: Callable[[Tensor, Tensor | None, float | None], Tensor]
    sequences: Callable[[Tensor, Tensor, Tensor, int, float | None], Tensor]
    share: Callable[[Tensor, Tensor], float]

    def __call__(self, loss: Tensor, mask: Tensor | None, norm: float | None = None) -> Tensor:
        return self.tokens(loss, mask, norm)


def _token_share(micro: Tensor, whole: Tensor) -> float:
    return float(micro.sum() / whole.sum().clamp(min=1))


def _sequence_share(micro: Tensor, whole: Tensor) -> float:
    return float((micro.sum(-1) > 0).sum() / (whole.sum(-1) > 0).sum().clamp(min=1))


def _row_share(micro: Tensor, whole: Tensor) -> float:
    return micro.shape[0] / whole.shape[0]


def token_mean(loss: Tensor, mask: Tensor | None, norm: float | None = None) -> Tensor:
    """sum(loss * mask) / sum(mask): every token weighs the same (TRL bnpo/dapo). 0 with no token."""
    return masked_mean(loss, mask)


def seq_mean_token_sum(loss: Tensor, mask: Tensor | None, norm: float | None = None) -> Tensor:
    """Mean over non-empty sequences of each sequence's token sum (verl)."""
    per_seq = (loss if mask is None else loss * mask).sum(-1)
    return _mean_nonempty(per_seq, mask)


def seq_mean_token_mean(loss: Tensor, mask: Tensor | None, norm: float | None = None) -> Tensor:
    """Mean over non-empty sequences of each sequence's token mean (TRL loss_type="grpo", but
    empty rows are left out of the mean as in verl)."""
    if mask is None:
        return loss.mean()
    per_seq = (loss * mask).sum(-1) / mask.sum(-1).clamp(min=1)
    return _mean_nonempty(per_seq, mask)


def seq_mean_token_sum_norm(loss: Tensor, mask: Tensor | None, norm: float | None = None) -> Tensor:
    """sum(loss * mask) / (B * norm) with a constant norm (default T): Dr. GRPO's unbiased form
    (TRL dr_grpo: norm = max_completion_length). Every row counts in B, empty or not."""
    B, T = loss.shape
    total = loss.sum() if mask is None else (loss * mask).sum()
    return total / (B * (T if norm is None else norm))


def _mean_nonempty(per_seq: Tensor, mask: Tensor | None) -> Tensor:
    """(B,) -> mean over the rows of mask with at least one token; 0 when there is none."""
    if mask is None:
        return per_seq.mean()
    nonempty = (mask.sum(-1) > 0).to(per_seq.dtype)
    return (per_seq * nonempty).sum() / nonempty.sum().clamp(min=1)


AGGREGATIONS.register("token-mean")(Aggregation(
    token_mean, lambda loss, n, nonempty, T, norm: torch.dot(loss, n) / n.sum().clamp(min=1), _token_share))
AGGREGATIONS.register("seq-mean-token-sum")(Aggregation(
    seq_mean_token_sum, lambda loss, n, nonempty, T, norm: torch.dot(loss, n) / nonempty.sum().clamp(min=1), _sequence_share))
AGGREGATIONS.register("seq-mean-token-mean")(Aggregation(
    seq_mean_token_mean, lambda loss, n, nonempty, T, norm: torch.dot(loss, nonempty) / nonempty.sum().clamp(min=1),
    _sequence_share))
AGGREGATIONS.register("seq-mean-token-sum-norm")(Aggregation(  # the norm is fixed by the caller: shares are row counts
    seq_mean_token_sum_norm,
    lambda loss, n, nonempty, T, norm: (loss * n).sum() / (loss.shape[0] * (T if norm is None else norm)), _row_share))


def aggregate(loss: Tensor, mask: Tensor | None, mode: str = "token-mean", norm: float | None = None) -> Tensor:
    """Reduce per-token losses (B, T) to a scalar with the named aggregation."""
    return AGGREGATIONS.get(mode).tokens(loss, mask, norm)


# ----------------------------------------------------------------------------------------
# The clipped surrogate and its diagnostics


def clipped_surrogate(ratio: Tensor, adv: Tensor, clip_low: float, clip_high: float,
                      dual_clip: float | None = None) -> Tensor:
    """PPO's pessimistic per-element loss, in the order CleanRL and verl write it:
    max(-A ratio, -A clip(ratio, 1 - clip_low, 1 + clip_high)), with ratio = exp(log r) taken by
    the caller (differentiable; its detached value serves the diagnostics).

    ratio, adv: broadcastable, e.g. (B, T) and (B, 1), or (B,) and (B,). With dual_clip c the loss
    of A < 0 elements is also capped at -A c (Ye et al. 2020; verl clip_ratio_c, TRL delta).
    Autograd gives d loss / d log r = -A r where the clip does not bind and 0 where it does.
    """
    if not 0 < clip_low < 1 or clip_high <= 0:
        raise ValueError(f"clip range must satisfy 0 < clip_low < 1 and clip_high > 0; got {clip_low}, {clip_high}")
    pg_loss1 = -adv * ratio
    pg_loss2 = -adv * torch.clamp(ratio, 1 - clip_low, 1 + clip_high)
    loss = torch.where(pg_loss2 > pg_loss1, pg_loss2, pg_loss1)  # the max; on a tie the unclipped term takes the gradient
    if dual_clip is not None:
        if dual_clip <= 1.0:
            raise ValueError(f"dual_clip must be > 1 (typically 3); got {dual_clip}")
        loss = torch.where(adv < 0, torch.minimum(loss, -adv * dual_clip), loss)
    return loss


def entropy_from_logits(logits: Tensor) -> Tensor:
    """Entropy of softmax(logits) over the last dim: (..., V) -> (...)."""
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(-1)


@torch.no_grad()
def ratio_diagnostics(log_ratio: Tensor, ratio: Tensor, adv: Tensor, live: Tensor | None, clip_live: Tensor | None,
                      clip_low: float, clip_high: float, dual_clip: float | None = None) -> dict[str, Tensor]:
    """Ratio min/mean/max, approx KL and clip fractions of a clipped objective.

    log_ratio, ratio = exp(log_ratio): (B, T) or (B,), clamped as the loss clamped them; adv
    broadcasts to them. live: 1 where a position counts (None: every one). approx_kl =
    mean(r) - mean(log r) - 1 = mean(r - 1 - log r), Schulman's k3 estimate of KL(old || new)
    from samples of the old policy.
    clipfrac_low: r < 1 - clip_low with A < 0; clipfrac_high: r > 1 + clip_high with A > 0;
    clipfrac: either; clipfrac_dual: the dual clip binds (r > c, A < 0). clip_live: the positions
    the clip fractions count over (live, except GSPO-token: per token, while its ratio is per sequence).
    """
    ratio_mean = masked_mean(ratio, live)
    # Positions that do not count take the mean, which lies in [min, max]: it changes neither (and
    # with no position counted, all three are 0).
    lo, hi = torch.aminmax(ratio if live is None else torch.where(live.bool(), ratio, ratio_mean))
    m = {"ratio_min": lo, "ratio_mean": ratio_mean, "ratio_max": hi,
         "approx_kl": ratio_mean - masked_mean(log_ratio, live) - 1.0}
    low = ((ratio < 1 - clip_low) & (adv < 0)).to(ratio.dtype)
    high = ((ratio > 1 + clip_high) & (adv > 0)).to(ratio.dtype)
    m["clipfrac_low"], m["clipfrac_high"] = masked_mean(low, clip_live), masked_mean(high, clip_live)
    m["clipfrac"] = m["clipfrac_low"] + m["clipfrac_high"]
    if dual_clip is not None:
        m["clipfrac_dual"] = masked_mean(((ratio > dual_clip) & (adv < 0)).to(ratio.dtype), clip_live)
    return m


def _token_adv(advantages: Tensor, like: Tensor) -> Tensor:
    """(B, T) advantages as they are; (B,) as a (B, 1) view that broadcasts over tokens."""
    if advantages.shape == like.shape:
        return advantages
    if advantages.dim() == 1 and advantages.shape[0] == like.shape[0]:
        return advantages[:, None]
    raise ValueError(f"advantages have shape {tuple(advantages.shape)}; expected {tuple(like.shape)} or ({like.shape[0]},)")


def _with_entropy(metrics: dict[str, Tensor], logits: Tensor | None, mask: Tensor | None) -> dict[str, Tensor]:
    if logits is not None:
        with torch.no_grad():
            metrics["entropy"] = masked_mean(entropy_from_logits(logits), mask)
    return metrics


# ----------------------------------------------------------------------------------------
# Policy objectives


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
    clip_high None = clip_low (symmetric, TRL epsilon_high=None). dual_clip c > 1 bounds the loss
    of A < 0 tokens by -c A (off by default, as TRL delta=None). logits: (B, T, V), only for the
    entropy diagnostic. The log-ratio is clamped to [-20, 20] (verl).
    """
    mask = check_mask(mask, log_prob)
    clip_high = clip_low if clip_high is None else clip_high
    adv = _token_adv(advantages, log_prob)
    log_ratio = (log_prob - old_log_prob).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO)  # (B, T)
    ratio = torch.exp(log_ratio)
    loss = aggregate(clipped_surrogate(ratio, adv, clip_low, clip_high, dual_clip), mask, agg, norm)
    return LossOutput(loss, lambda: _with_entropy(ratio_diagnostics(
        log_ratio.detach(), ratio.detach(), adv, mask, mask, clip_low, clip_high, dual_clip), logits, mask))


@POLICY_LOSSES.register("grpo")
def grpo_loss(log_prob: Tensor, old_log_prob: Tensor, advantages: Tensor, mask: Tensor | None = None, *,
              clip_low: float = 0.2, clip_high: float | None = None, dual_clip: float | None = None,
              agg: str = "token-mean", norm: float | None = None, logits: Tensor | None = None) -> LossOutput:
    """GRPO: the token-level clipped objective with group-relative advantages (shapes as `ppo_loss`)."""
    return ppo_loss(log_prob, old_log_prob, advantages, mask, clip_low=clip_low, clip_high=clip_high,
                    dual_clip=dual_clip, agg=agg, norm=norm, logits=logits)


POLICY_LOSSES.register("rloo")(grpo_loss)


def sequence_log_ratio(log_prob: Tensor, old_log_prob: Tensor, mask: Tensor | None) -> Tensor:
    """log s_i = mean over the sequence's tokens of (log pi - log pi_old), clamped at 10 (verl). (B,).

    An empty sequence has log s = 0 (s = 1)."""
    return masked_mean(log_prob - old_log_prob, mask, dim=-1).clamp(max=MAX_LOG_S)


def _sequence_adv(advantages: Tensor, like: Tensor, mask: Tensor | None) -> Tensor:
    """(B,) as it is; (B, T) token-level input -> its per-sequence mean over masked-in tokens."""
    if advantages.dim() == 1:
        if advantages.shape[0] != like.shape[0]:
            raise ValueError(f"advantages have {advantages.shape[0]} entries for {like.shape[0]} sequences")
        return advantages
    return masked_mean(_token_adv(advantages, like), mask, dim=-1)


def _nonempty(mask: Tensor | None, like: Tensor) -> Tensor | None:
    """(B,) 1 for the sequences with at least one token (None: all are)."""
    return None if mask is None else (mask.sum(-1) > 0).to(like.dtype)


def aggregate_sequences(seq_loss: Tensor, mask: Tensor | None, T: int, mode: str = "seq-mean-token-mean",
                        norm: float | None = None) -> Tensor:
    """`aggregate` of a loss that every token of a sequence carries alike, from its (B,) values:
    equal to aggregate(seq_loss[:, None].expand(B, T), mask, mode, norm).

    seq_loss: (B,); mask: (B, T) or None. Token counts weigh the sequences: token-mean is
    sum(n_i l_i) / sum(n_i), seq-mean-token-mean the mean of l_i over non-empty sequences,
    seq-mean-token-sum sum(n_i l_i) over their number, seq-mean-token-sum-norm sum(n_i l_i) / (B norm).
    """
    B = seq_loss.shape[0]
    n = seq_loss.new_full((B,), T) if mask is None else mask.sum(-1)  # (B,) tokens per sequence
    return AGGREGATIONS.get(mode).sequences(seq_loss, n, (n > 0).to(seq_loss.dtype), T, norm)


def _gspo_clip(clip_low: float, clip_high: float | None, dual_clip: float | None) -> float:
    if dual_clip is not None:
        raise ValueError("GSPO has no dual clip; leave dual_clip unset")
    return clip_low if clip_high is None else clip_high


@POLICY_LOSSES.register("gspo")
def gspo_loss(log_prob: Tensor, old_log_prob: Tensor, advantages: Tensor, mask: Tensor | None = None, *,
              clip_low: float = 3e-4, clip_high: float | None = 4e-4, dual_clip: float | None = None,
              agg: str = "seq-mean-token-mean", norm: float | None = None, logits: Tensor | None = None) -> LossOutput:
    """GSPO (Zheng et al. 2025): s_i = exp(mean_t log-ratio); loss_i = max(-A_i s_i, -A_i clip(s_i, 1-eps_low, 1+eps_high)).

    log_prob, old_log_prob, mask: (B, T); advantages: (B,) (a (B, T) input is reduced to its
    per-sequence mean). Each token carries its sequence's loss, so the default aggregation gives
    the paper's (1/G) sum_i (TRL importance_sampling_level="sequence", loss_type="grpo"). log s is
    clamped at 10 (verl). Ratio, clip and approx-KL diagnostics are per non-empty sequence, on s_i.
    GSPO has no dual clip: dual_clip must stay None.
    """
    clip_high = _gspo_clip(clip_low, clip_high, dual_clip)
    mask = check_mask(mask, log_prob)
    log_s = sequence_log_ratio(log_prob, old_log_prob, mask)  # (B,)
    adv = _sequence_adv(advantages, log_prob, mask)  # (B,)
    s = torch.exp(log_s)
    seq_loss = clipped_surrogate(s, adv, clip_low, clip_high)  # (B,)
    loss = aggregate_sequences(seq_loss, mask, log_prob.shape[1], agg, norm)
    live = _nonempty(mask, log_prob)
    return LossOutput(loss, lambda: _with_entropy(
        ratio_diagnostics(log_s.detach(), s.detach(), adv, live, live, clip_low, clip_high), logits, mask))


@POLICY_LOSSES.register("gspo_token")
def gspo_token_loss(log_prob: Tensor, old_log_prob: Tensor, advantages: Tensor, mask: Tensor | None = None, *,
                    clip_low: float = 3e-4, clip_high: float | None = 4e-4, dual_clip: float | None = None,
                    agg: str = "seq-mean-token-mean", norm: float | None = None,
                    logits: Tensor | None = None) -> LossOutput:
    """GSPO-token: per-token ratio s_i,t = sg[s_i] * pi(y_t) / sg[pi(y_t)], so token-level
    advantages (B, T) are allowed (verl's form of GSPO).

    log_prob, old_log_prob, mask: (B, T); advantages: (B,) or (B, T). The token log-ratio
    log_prob - sg[log_prob] + sg[log s_i] is clamped at 10 as a whole (verl), so beyond the clamp
    the gradient is 0 exactly as in `gspo_loss`: with a constant per-sequence advantage the two
    are equal in value and gradient. Ratio diagnostics are per sequence (on s_i), clip fractions
    per token.
    """
    clip_high = _gspo_clip(clip_low, clip_high, dual_clip)
    mask = check_mask(mask, log_prob)
    log_s = masked_mean(log_prob - old_log_prob, mask, dim=-1)  # (B,), not yet clamped
    log_ratio = (log_prob - log_prob.detach() + log_s.detach()[:, None]).clamp(max=MAX_LOG_S)  # (B, T)
    adv = _token_adv(advantages, log_prob)
    loss = aggregate(clipped_surrogate(torch.exp(log_ratio), adv, clip_low, clip_high), mask, agg, norm)
    live = _nonempty(mask, log_prob)

    def metrics() -> dict[str, Tensor]:
        seq_log_s = log_s.detach().clamp(max=MAX_LOG_S)[:, None]  # (B, 1): one ratio per sequence
        return _with_entropy(ratio_diagnostics(seq_log_s, seq_log_s.exp(), adv, None if live is None else live[:, None],
                                               mask, clip_low, clip_high), logits, mask)

    return LossOutput(loss, metrics)


def policy_loss(name: str, *args: Any, **kwargs: Any) -> LossOutput:
    """Call the registered policy loss `name` (ppo, grpo, rloo, gspo, gspo_token)."""
    return POLICY_LOSSES.get(name)(*args, **kwargs)
