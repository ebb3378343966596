"""Per-token log-probs of given sequences under an LM (training, scoring, reference policies).

    s = token_logprobs(model, ids, attention, target_mask, temperature)   # TokenScores
    s.logprobs  (B, T) log softmax(logits / temperature) at each target token, 0 elsewhere

Two things keep this cheaper than scoring whole sequences:
  * only positions that predict a target token go through the LM head (prompt and tool-output
    positions never do), via the model's `logits_to_keep` boolean mask;
  * `share_prefix=True`: rows that start with the same prompt (the G samples of a group) run
    that prompt once; its key/value cache is repeated for each row and the rest of every row
    attends to it. Gradients flow back through the shared cache, so values and gradients are
    those of scoring each row separately (tests check both).
"""

from __future__ import annotations

from typing import NamedTuple

import torch


class TokenScores(NamedTuple):
    logprobs: torch.Tensor  # (B, T), 0 where not a target
    entropy: torch.Tensor | None  # (B, T) or None
    hidden: torch.Tensor | None  # (N, H) last hidden state at the positions predicting the N targets


def _scores(logits: torch.Tensor, tokens: torch.Tensor, temperature: float, with_entropy: bool):
    """(N, V) logits of N predicting positions + their (N,) targets -> log-probs (N,), entropy (N,) or None."""
    logits = logits.float()
    if temperature > 0 and temperature != 1.0:
        logits = logits / temperature
    logp_all = torch.log_softmax(logits, dim=-1)
    lp = logp_all.gather(-1, tokens[:, None]).squeeze(-1)
    ent = None
    if with_entropy:
        with torch.no_grad():  # a diagnostic: never part of the graph
            ent = -(logp_all.exp() * logp_all).sum(-1)
    return lp, ent


def token_logprobs(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    target_mask: torch.Tensor,
    temperature: float = 1.0,
    with_entropy: bool = False,
    with_hidden: bool = False,
    share_prefix: bool = False,
) -> TokenScores:
    """Log-probs of the target tokens under softmax(logits / temperature).

    input_ids, attention_mask, target_mask: (B, T), right-padded; target_mask[b, t] = 1 where
    token t is scored (generated tokens; never t = 0).
    Returns logprobs (B, T) and optionally entropy (B, T), zero where target_mask is 0, and
    the hidden states (N, H) of the predicting positions in row-major target order (critics).
    share_prefix: run each distinct prompt (the tokens before a row's first target) once.
    """
    target = target_mask.bool()
    if target[:, 0].any():
        raise ValueError("target_mask marks token 0, which no position predicts")
    if share_prefix and not with_hidden:
        shared = _shared_prefix(model, input_ids, attention_mask, target, temperature, with_entropy)
        if shared is not None:
            return shared
    keep = torch.zeros_like(target)
    keep[:, :-1] = target[:, 1:]
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                use_cache=False, logits_to_keep=keep, output_hidden_states=with_hidden)
    lp, ent = _scores(out.logits, input_ids[target], temperature, with_entropy)
    logprobs = lp.new_zeros(input_ids.shape)
    logprobs[target] = lp
    entropy = None
    if ent is not None:
        entropy = ent.new_zeros(input_ids.shape)
        entropy[target] = ent
    hidden = out.hidden_states[-1][keep] if with_hidden else None
    return TokenScores(logprobs, entropy, hidden)


def _shared_prefix(model, input_ids, attention_mask, target, temperature, with_entropy) -> TokenScores | None:
    """The prompt of each group once, then every row's continuation on the repeated cache; None if nothing is shared."""
    B, T = input_ids.shape
    has = target.any(-1)
    if not has.all():
        return None
    if model.training and torch.is_grad_enabled() and any(getattr(m, "gradient_checkpointing", False) for m in model.modules()):
        return None  # checkpointed layers return no cache in training: score rows whole
    first = target.float().argmax(-1)  # each row's first target: its prompt is ids[:first]
    keys = [tuple(input_ids[b, : int(first[b])].tolist()) for b in range(B)]
    groups: dict[tuple[int, ...], int] = {}
    g = torch.tensor([groups.setdefault(k, len(groups)) for k in keys], device=input_ids.device)
    if len(groups) == B:
        return None
    # 1. Each distinct prompt, left-padded, with the cache kept (and differentiable).
    plen = [len(k) for k in groups]
    P = max(plen)
    pre = torch.zeros(len(groups), P, dtype=input_ids.dtype, device=input_ids.device)
    pre_attn = torch.zeros_like(pre)
    for i, k in enumerate(groups):
        pre[i, P - len(k):] = torch.tensor(k, dtype=input_ids.dtype)
        pre_attn[i, P - len(k):] = 1
    # the last prompt position predicts each row's first target. A boolean mask hands the head a (U, H) matrix;
    # logits_to_keep=1 gave it a (U, 1, H) view, which a bf16 CPU matmul ran as bmm on a copy of the whole weight
    last = torch.zeros_like(pre, dtype=torch.bool)
    last[:, -1] = True
    out = model(input_ids=pre, attention_mask=pre_attn, position_ids=(pre_attn.cumsum(-1) - 1).clamp(min=0),
                use_cache=True, logits_to_keep=last)
    cache = out.cache
    cache.batch_select_indices(g)  # indexing is differentiable: gradients of shared rows add up
    # 2. Every row's continuation (from its first target on), right-padded, on top of its prompt.
    lengths = attention_mask.sum(-1)
    S = int((lengths - first).max())
    cols = torch.arange(S, device=input_ids.device)
    src = (first[:, None] + cols[None]).clamp(max=T - 1)
    live = cols[None] < (lengths - first)[:, None]
    suf = torch.where(live, input_ids.gather(1, src), torch.zeros_like(src))
    suf_target = live & target.gather(1, src)
    keep = torch.zeros_like(suf_target)
    keep[:, :-1] = suf_target[:, 1:]
    pos = torch.tensor(plen, device=input_ids.device)[g][:, None] + cols[None]
    out2 = model(input_ids=suf, attention_mask=torch.cat([pre_attn[g], live.long()], 1), position_ids=pos,
                 cache=cache, use_cache=True, logits_to_keep=keep)
    # 3. The first target of each row is predicted by its prompt's last position; the rest by the continuation.
    lp0, ent0 = _scores(out.logits[g], suf[:, 0], temperature, with_entropy)
    lp1, ent1 = _scores(out2.logits, suf[:, 1:][keep[:, :-1]], temperature, with_entropy)
    logprobs = lp0.new_zeros(B, T)
    rows = torch.arange(B, device=input_ids.device)
    logprobs[rows, first] = lp0
    rest = keep[:, :-1]
    at = (first[:, None] + 1 + cols[None, : S - 1]).expand(B, -1)[rest]
    logprobs[rows[:, None].expand(-1, S - 1)[rest], at] = lp1
    entropy = None
    if with_entropy:
        entropy = ent0.new_zeros(B, T)
        entropy[rows, first] = ent0
        entropy[rows[:, None].expand(-1, S - 1)[rest], at] = ent1
    return TokenScores(logprobs, entropy, None)
