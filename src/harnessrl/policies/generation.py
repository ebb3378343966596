"""Generation engines: a batch of prompts (token ids) -> sampled completions with their log-probs.

`LMPolicy` talks to an engine only through `GenerationEngine.generate`, so a server-backed
engine (vLLM) can be added later without touching the policy or the trainer. Only the
in-process Hugging Face engine ships, because it is the only one tested here.

Log-probs are the *behaviour* log-probs: log softmax(logits / temperature) at the sampled
token, over the full vocabulary. Top-k / top-p only restrict what is sampled; they never
enter the recorded log-probs, so importance ratios against the training distribution carry
no truncation bias (the trainer recomputes log-probs under the same temperature).

`HFEngine` runs one KV-cached batch for the whole group: identical prompts (the G samples
of a GRPO group) are prefilled once and their cache rows repeated; prompts are left-padded
with position ids counted from each prompt's first real token, so a sequence's log-probs
do not depend on what it was batched with (up to float rounding); finished sequences
leave the batch in a few in-place compactions (never a copy of the whole cache per stop).
"""

from __future__ import annotations

import contextlib

import functools
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from harnessrl.policies.sampling import RowSpec, row_uniforms


@dataclass(frozen=True, slots=True)
class SamplingParams:
    max_new_tokens: int = 128
    temperature: float = 1.0  # 0 = greedy (log-probs then under temperature 1)
    top_p: float = 1.0
    top_k: int = 0  # 0 = off
    stop_token_ids: tuple[int, ...] = ()


@dataclass(slots=True)
class Completion:
    token_ids: np.ndarray  # (n,) int32 generated tokens, the stop token included when one was hit
    logprobs: np.ndarray  # (n,) float32 behaviour log-probs of those tokens
    finished: bool  # ended on a stop token (False: hit max_new_tokens)


class GenerationEngine(ABC):
    """Anything that samples completions for token-id prompts."""

    @abstractmethod
    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams,
                 generator: torch.Generator | None = None, rows: Sequence[RowSpec] | None = None) -> list[Completion]:
        """One completion per prompt, in order. `rows` (one per prompt; policies/sampling.py): each row's
        own random stream and token cap, so a row's sample does not depend on the rest of the batch."""

    def sync_weights(self) -> None:
        """Make the engine sample from the trained weights (no-op when it shares the model)."""


def sample_next(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None,
                uniform: torch.Tensor | None = None):
    """Sample one token per row. logits: (B, V). Returns (tokens (B,), behaviour log-probs (B,)).
    uniform: (B, 1) numbers in [0, 1), one per row (per-row streams); None: drawn from `generator`."""
    logits = logits.float()
    if params.temperature <= 0:
        logp = torch.log_softmax(logits, dim=-1)
        tokens = logp.argmax(dim=-1)
        return tokens, logp.gather(-1, tokens[:, None]).squeeze(-1)
    scaled = logits if params.temperature == 1.0 else logits / params.temperature
    filtering = (params.top_k and params.top_k < logits.shape[-1]) or params.top_p < 1.0
    if not filtering:
        return inverse_cdf_draw(scaled, generator, uniform=uniform)  # the draw's log-probs are the full-vocabulary ones
    logp = torch.log_softmax(scaled, dim=-1)
    filtered = logp
    if params.top_k and params.top_k < logp.shape[-1]:
        kth = torch.topk(filtered, params.top_k, dim=-1).values[:, -1:]
        filtered = filtered.masked_fill(filtered < kth, -torch.inf)
    if params.top_p < 1.0:
        sorted_lp, order = torch.sort(filtered, dim=-1, descending=True)
        cum = sorted_lp.exp().cumsum(-1)
        drop = cum - sorted_lp.exp() > params.top_p  # keep the smallest set whose mass reaches top_p
        filtered = filtered.scatter(-1, order, sorted_lp.masked_fill(drop, -torch.inf))
    tokens, _ = inverse_cdf_draw(filtered, generator, uniform=uniform)
    return tokens, logp.gather(-1, tokens[:, None]).squeeze(-1)


def inverse_cdf_draw(scores: torch.Tensor, generator: torch.Generator | None, block: int = 1024,
                     uniform: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One token per row from softmax(scores), by inverse CDF. scores: (B, V), -inf = never drawn.
    Returns (tokens (B,), their log-probs under softmax(scores) (B,)).

    One uniform number per row (torch.multinomial draws one per vocabulary entry). The CDF is
    found in two levels: sums of `block`-token blocks, their prefix sum to pick the block, then
    the prefix sum inside that one block. A decode step on a 49k vocabulary spent most of its
    sampling time in a (B, V) cumsum and two softmax passes; this is one exp pass and sums
    (measured here: 64 rows x 49,152, 21-36 ms -> 5.6 ms), and as exact as the flat prefix sum.
    """
    B, V = scores.shape
    m = scores.amax(-1, keepdim=True)
    e = scores.new_zeros(B, V + (-V) % block)
    torch.sub(scores, m, out=e[:, :V]).exp_()  # unnormalised probabilities; padding stays 0
    blocks = e.view(B, -1, block)
    block_sum = blocks.sum(-1)  # (B, V / block)
    block_cdf = block_sum.cumsum(-1)
    total = block_cdf[:, -1:]
    if uniform is None:
        uniform = torch.rand((B, 1), generator=generator, device=scores.device, dtype=e.dtype)
    u = uniform.to(device=scores.device, dtype=e.dtype) * total
    j = torch.searchsorted(block_cdf, u, right=True).clamp(max=block_cdf.shape[1] - 1)  # (B, 1)
    before = block_cdf.gather(-1, j) - block_sum.gather(-1, j)  # mass of the blocks before block j
    inner = blocks[torch.arange(B, device=scores.device), j[:, 0]].cumsum(-1)  # (B, block)
    # Rounding can put u - before a hair outside [0, inner[-1]): keep it inside, so the token drawn has mass.
    r = torch.minimum((u - before).clamp(min=0), torch.nextafter(inner[:, -1:], torch.zeros_like(u)))
    k = torch.searchsorted(inner, r, right=True).clamp(max=block - 1)
    tokens = (j * block + k).squeeze(-1).clamp(max=V - 1)
    logprobs = scores.gather(-1, tokens[:, None]).squeeze(-1) - m.squeeze(-1) - total.squeeze(-1).log()
    return tokens, logprobs


def _is_plain_decoder(model: torch.nn.Module) -> bool:
    """Full-attention decoder layers only (sliding-window / linear-attention models keep transformers' cache)."""
    try:
        cfg = model.config.get_text_config(decoder=True)
    except AttributeError:
        return False
    types = getattr(cfg, "layer_types", None)
    return bool(getattr(cfg, "num_hidden_layers", 0)) and (types is None or set(types) == {"full_attention"})


@functools.cache
def preallocated_layer() -> type:
    """A KV-cache layer that writes into buffers sized for the whole generation.

    transformers' DynamicLayer grows by torch.cat on every token (a copy of the whole cache per
    layer per step); this one allocates [B, heads, capacity, head_dim] once and returns views of
    the filled part. Same values, no per-token copies. (A class built on first use: transformers
    is imported lazily.)
    """
    from transformers.cache_utils import DynamicLayer

    class Preallocated(DynamicLayer):
        capacity = 0

        def allocate(self, like_k, like_v, rows: int):
            """Empty buffers for `rows` rows shaped like one row's keys/values (kv_heads, L, head_dim)."""
            self.device, self.n = like_k.device, 0
            self.kbuf = like_k.new_zeros(rows, like_k.shape[0], self.capacity, like_k.shape[-1])
            self.vbuf = like_v.new_zeros(rows, like_v.shape[0], self.capacity, like_v.shape[-1])
            self.is_initialized = True

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.allocate(key_states[0], value_states[0], key_states.shape[0])
            m = key_states.shape[-2]
            self.kbuf[:, :, self.n:self.n + m] = key_states
            self.vbuf[:, :, self.n:self.n + m] = value_states
            self.n += m
            self.keys, self.values = self.kbuf[:, :, :self.n], self.vbuf[:, :, :self.n]
            return self.keys, self.values

        def batch_select_indices(self, indices):
            """Rows `indices` (repeats allowed: a group's samples share a prefill) in new buffers;
            only the filled part is copied, not the whole capacity."""
            if self.is_initialized:
                k = self.kbuf.new_empty(len(indices), *self.kbuf.shape[1:])
                v = self.vbuf.new_empty(len(indices), *self.vbuf.shape[1:])
                k[:, :, :self.n], v[:, :, :self.n] = self.kbuf[indices, :, :self.n], self.vbuf[indices, :, :self.n]
                self.kbuf, self.vbuf = k, v
                self.keys, self.values = self.kbuf[:, :, :self.n], self.vbuf[:, :, :self.n]

        def compact(self, keep):
            """Keep rows `keep` (increasing), moved to the front of the same buffers: no allocation,
            and only the filled part of the kept rows is copied."""
            if self.is_initialized:
                m = len(keep)
                self.kbuf[:m, :, :self.n] = self.kbuf[keep, :, :self.n]
                self.vbuf[:m, :, :self.n] = self.vbuf[keep, :, :self.n]
                self.kbuf, self.vbuf = self.kbuf[:m], self.vbuf[:m]
                self.keys, self.values = self.kbuf[:, :, :self.n], self.vbuf[:, :, :self.n]

    return Preallocated


def _preallocated_cache(model: torch.nn.Module, capacity: int):
    """A transformers Cache of `preallocated_layer` layers, each with room for `capacity` tokens."""
    from transformers.cache_utils import Cache

    layers = getattr(model.config.get_text_config(decoder=True), "num_hidden_layers", None)
    if not layers:
        return None
    cls = preallocated_layer()
    made = [cls() for _ in range(layers)]
    for layer in made:
        layer.capacity = capacity
    return Cache(layers=made)


@contextlib.contextmanager
def cpu_threads(n: int | None):
    """Run the block with at most `n` intra-op threads (None: unchanged), then restore the setting.

    Why decode steps use one thread on CPU: a one-token step of a small model is hundreds of tiny
    ops, too small to split profitably, and a split op must wait until every one of its threads
    is scheduled. On a loaded machine that wait is a scheduler timeslice per op: measured here
    (2 cores, load ~8) an attention matmul of one decode step took 0.16 ms on one thread and
    6.2 ms on two, and one 64-token SmolLM2 turn through aider 15 s against 143 s.
    """
    before = torch.get_num_threads()
    if n is None or n >= before:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class HFEngine(GenerationEngine):
    """Batched, KV-cached sampling with a Hugging Face causal LM (or a PEFT model around one)."""

    def __init__(self, model: torch.nn.Module, pad_token_id: int, preallocate: bool = True, lean: bool = True,
                 decode_threads: int | None = 1, prefix_cache_mb: int = 0):
        from harnessrl.policies import decode
        from harnessrl.policies.prefix_cache import PrefixStore

        self.model = model
        self.decode_threads = decode_threads
        self.pad_token_id = int(pad_token_id)
        self.preallocate = preallocate and _is_plain_decoder(model)
        self.lean = decode.LeanDecoder(model) if lean and self.preallocate and decode.supports(model) else None
        # keys/values of earlier turns kept between calls (prefix_cache.py); needs the preallocated layers
        self.prefix = PrefixStore(prefix_cache_mb) if prefix_cache_mb and self.preallocate else None

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @torch.no_grad()
    def generate(self, prompts, params, generator=None, rows=None):
        if not prompts:
            return []
        if rows is not None and len(rows) != len(prompts):
            raise ValueError(f"{len(rows)} row specs for {len(prompts)} prompts")
        device = self.device
        was_training = self.model.training
        self.model.eval()
        try:
            return self._generate(prompts, params, generator, device, list(rows) if rows is not None else None)
        finally:
            self.model.train(was_training)

    def _generate(self, prompts, params, generator, device, rows):
        # 1. Prefill each distinct prompt once (a GRPO group shares one prompt).
        distinct: dict[tuple[int, ...], int] = {}
        row_of = [distinct.setdefault(tuple(int(t) for t in p), len(distinct)) for p in prompts]
        uniq = list(distinct)
        if any(len(p) == 0 for p in uniq):
            raise ValueError("cannot generate from an empty prompt")
        reuse = [(0, None)] * len(uniq)
        if self.prefix is not None:
            self.prefix.validate(self.model)
            reuse = [self.prefix.lookup(p) for p in uniq]
        out, attn, pos = self._prefill(uniq, reuse, params, device)
        cache, prefill_width = out.cache, attn.shape[1]
        select = torch.tensor(row_of, dtype=torch.long, device=device)
        if len(uniq) < len(prompts) or row_of != list(range(len(prompts))):
            cache.batch_select_indices(select)
        logits = out.logits[select]  # (B, V): one row per unique prompt, by row
        attn = attn[select]
        next_pos = pos[select, -1] + 1

        # 2. Decode. `live` maps batch rows to prompt indices; a row that stops stays in the batch
        # (its outputs ignored) until half the rows are done, then the cache is compacted in place:
        # at most log2(B) compactions, each copying only the filled cache of the rows still going,
        # instead of a copy of the whole cache every time one sequence stops.
        keep = None
        if self.prefix is not None:
            def keep(rows, prompt_idx, attn_now, tokens_out):
                self._keep_rows(cache, rows, prompt_idx, attn_now, prefill_width, prompts, tokens_out)
        with cpu_threads(self.decode_threads if device.type == "cpu" else None):
            tokens_out, logps_out, finished = self._decode(cache, logits, attn, next_pos, len(prompts), params,
                                                           generator, device, keep, rows)
        tokens_np, logps_np, fin = tokens_out.cpu().numpy(), logps_out.cpu().numpy(), finished.cpu().numpy()
        result = []
        for i in range(len(prompts)):
            n = int((tokens_np[i] >= 0).sum())
            result.append(Completion(tokens_np[i, :n].astype(np.int32), logps_np[i, :n].astype(np.float32), bool(fin[i])))
        return result

    def _prefill(self, uniq, reuse, params, device):
        """Prefill each distinct prompt after its kept prefix (reuse[u] = (n, entry); n = 0: the whole
        prompt). Cache columns: kept keys/values right-aligned in [0, C), then the rest of each prompt
        left-padded in [C, C + S); the attention mask hides the gaps, and position ids continue each
        row's own count. Returns the model output, the (U, C + S) attention mask and positions."""
        from harnessrl.policies.prefix_cache import place_prefixes

        C = max(n for n, _ in reuse)
        S = max(len(p) - n for p, (n, _) in zip(uniq, reuse))
        cache = _preallocated_cache(self.model, C + S + params.max_new_tokens) if self.preallocate else None
        ids = torch.full((len(uniq), S), self.pad_token_id, dtype=torch.long)
        attn = torch.zeros((len(uniq), S), dtype=torch.long)
        pos = torch.zeros((len(uniq), S), dtype=torch.long)
        for u, (p, (n, _)) in enumerate(zip(uniq, reuse)):
            m = len(p) - n
            ids[u, S - m:] = torch.tensor(p[n:], dtype=torch.long)
            attn[u, S - m:] = 1
            pos[u] = n  # padding columns: any position, they are masked
            pos[u, S - m:] = torch.arange(n, len(p))
        attn, pos = attn.to(device), pos.to(device)
        if C:  # buffers sized from a kept row (a fresh cache sizes them on its first update)
            first = next(e for n, e in reuse if n)
            for layer, k, v in zip(cache.layers, first.keys, first.values):
                layer.allocate(k.to(device), v.to(device), len(uniq))
            attn = torch.cat([place_prefixes(cache.layers, reuse, C).to(device), attn], 1)
        # prompts are left-padded: the last column predicts each row's first token. A boolean mask hands the LM head
        # a (U, H) matrix; logits_to_keep=1 gave it a (U, 1, H) view, which bf16 on CPU ran as bmm on a weight copy
        last = torch.zeros(ids.shape, dtype=torch.bool, device=device)
        last[:, -1] = True
        out = self.model(input_ids=ids.to(device), attention_mask=attn, position_ids=pos, cache=cache, use_cache=True,
                         logits_to_keep=last)
        return out, attn, pos

    def _keep_rows(self, cache, rows, prompt_idx, attn, prefill_width, prompts, tokens_out):
        """Copy batch rows' keys/values (prompt + the generated tokens already fed) into the prefix store."""
        W, filled = prefill_width, cache.layers[0].n
        for b, i in zip(rows.tolist(), prompt_idx.tolist()):
            gen = tokens_out[i]
            m = min(int((gen >= 0).sum()), filled - W)  # a stopped row is fed its stop token, then repeats
            cols = torch.cat([attn[b, :W].nonzero().squeeze(-1), torch.arange(W, W + m, device=attn.device)])
            keys = [layer.kbuf[b].index_select(1, cols) for layer in cache.layers]
            values = [layer.vbuf[b].index_select(1, cols) for layer in cache.layers]
            self.prefix.put(list(prompts[i]) + gen[:m].tolist(), keys, values)

    def _decode(self, cache, logits, attn, next_pos, B, params, generator, device, keep=None, rows=None):
        """One token per live row per step until every row stopped or the budget is spent.
        Returns tokens (B, max_new_tokens; -1 after the end), their log-probs, and which rows stopped.
        keep(rows, prompt_idx, attn, tokens_out): called for batch rows about to leave the cache.
        rows: per-prompt RowSpecs (own random stream, own cap; policies/sampling.py) or None."""
        live = torch.arange(B, device=device)
        done = torch.zeros(B, dtype=torch.bool, device=device)
        tokens_out = torch.full((B, params.max_new_tokens), -1, dtype=torch.long, device=device)
        logps_out = torch.zeros((B, params.max_new_tokens), dtype=torch.float32, device=device)
        finished = torch.zeros(B, dtype=torch.bool, device=device)
        stops = torch.tensor(params.stop_token_ids, dtype=torch.long, device=device)
        tok = torch.full((B,), self.pad_token_id, dtype=torch.long, device=device)
        caps = None
        if rows is not None and any(r.max_new_tokens is not None for r in rows):
            caps = torch.tensor([min(r.max_new_tokens or params.max_new_tokens, params.max_new_tokens) for r in rows],
                                dtype=torch.long, device=device)
        streams = rows is not None and params.temperature > 0 and any(r.generator is not None for r in rows)
        for step in range(params.max_new_tokens):
            going = (~done).nonzero().squeeze(-1)
            # per-row streams: each going row draws its own next number, whatever else is in the batch;
            # a shared stream: sample only the rows still going (the same stream as with no stopped rows)
            uniform = row_uniforms([rows[i] for i in live[going].tolist()], generator, device) if streams else None
            t, lp = sample_next(logits if len(going) == len(done) else logits[going], params, generator, uniform)
            tok = tok.index_put((going,), t)
            tokens_out[live[going], step] = t
            logps_out[live[going], step] = lp.float()
            stopped = torch.isin(t, stops) if len(stops) else torch.zeros_like(t, dtype=torch.bool)
            finished[live[going[stopped]]] = True
            done[going[stopped]] = True
            if caps is not None:  # a row at its own cap stops like one at the budget: not finished
                done[going[caps[live[going]] <= step + 1]] = True
            if step + 1 == params.max_new_tokens or bool(done.all()):
                break
            if int(done.sum()) * 2 >= len(done):
                if keep is not None:
                    leaving = done.nonzero().squeeze(-1)
                    keep(leaving, live[leaving], attn, tokens_out)
                stay = (~done).nonzero().squeeze(-1)
                live, tok, attn, next_pos, done = live[stay], tok[stay], attn[stay], next_pos[stay], done[stay]
                for layer in cache.layers if self.preallocate else ():
                    layer.compact(stay)
                if not self.preallocate:
                    cache.batch_select_indices(stay)
            attn = torch.cat([attn, torch.ones_like(attn[:, :1])], dim=1)
            if self.lean is not None:  # the same step without transformers' per-call bookkeeping (decode.py)
                layers = cache.layers
                logits = self.lean.step(tok, next_pos, layers[0].n, [x.kbuf for x in layers], [x.vbuf for x in layers],
                                        attn.bool())
                for x in layers:
                    x.n += 1
            else:
                out = self.model(input_ids=tok[:, None], attention_mask=attn, position_ids=next_pos[:, None],
                                 cache=cache, use_cache=True)
                cache, logits = out.cache, out.logits[:, -1]
            next_pos = next_pos + 1
        if keep is not None:
            keep(torch.arange(len(live), device=device), live, attn, tokens_out)
        return tokens_out, logps_out, finished
