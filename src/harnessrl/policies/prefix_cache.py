"""Keys and values of earlier turns, kept between `generate` calls, so a turn prefills only what is new.

A multi-turn episode sends the whole conversation every turn: turn t's prompt is turn t-1's
prompt, its reply, and the new observation. Without this, each turn encodes all of it again;
a py-spy sample of a 10-turn terminus evaluation of SmolLM2 spent 60% of its time in prefill.

    store = PrefixStore(budget_mb=1024)
    n, entry = store.lookup(prompt_ids)    # the longest common prefix with a kept row
    ...prefill prompt_ids[n:] on top of entry.keys / entry.values...
    store.put(prompt_ids + generated_ids, keys, values)

Why this is exact: a token's key and value depend only on the tokens before it (causal
attention, rotary positions counted from the row's first token), so the first n positions of
any earlier row that shares the first n tokens carry exactly the values a fresh prefill would
compute, up to float rounding from batching. A common prefix is enough; the kept row need not
be a prefix of the new prompt (a harness that rewrites the tail of history still reuses the rest).

When it must not be used: keys and values belong to the weights that computed them. The store
is emptied whenever the model's weights change (any in-place update bumps a parameter's
version counter: optimizer steps, `load_state_dict`), a parameter's storage is replaced, or
the active / disabled adapters change (PEFT's reference context). Training loops therefore
never sample from stale keys; the cache only pays off while the weights stand still
(evaluation, and the turns of one rollout round).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(eq=False)  # identity: a field-wise == would compare the arrays and tensors
class Entry:
    ids: np.ndarray  # (L,) int64 tokens whose keys/values are kept
    keys: list[torch.Tensor]  # per layer (kv_heads, L, head_dim)
    values: list[torch.Tensor]
    nbytes: int
    used: int  # LRU clock


class PrefixStore:
    """Per-row keys/values of recent conversations, up to `budget_mb`, least recently used out first."""

    def __init__(self, budget_mb: int):
        self.budget = int(budget_mb) << 20
        self.entries: list[Entry] = []
        self.clock = 0
        self.fingerprint: tuple | None = None
        self.hits = self.reused_tokens = 0

    # -- validity --------------------------------------------------------------------------

    @staticmethod
    def weights_fingerprint(model: torch.nn.Module) -> tuple:
        """Changes whenever what the model computes may have changed (module docstring)."""
        params = list(model.parameters())
        version = sum(p._version for p in params)
        storage = sum(p.data_ptr() for p in params)
        adapters = tuple((m.disable_adapters, tuple(m.active_adapters)) for m in model.modules()  # PEFT tuner layers
                         if isinstance(getattr(m, "disable_adapters", None), bool)
                         and isinstance(getattr(m, "active_adapters", None), (list, tuple)))
        return id(model), version, storage, adapters

    def validate(self, model: torch.nn.Module) -> None:
        """Drop everything if the weights changed since the entries were computed."""
        fp = self.weights_fingerprint(model)
        if fp != self.fingerprint:
            self.entries.clear()
            self.fingerprint = fp

    # -- lookup and storage --------------------------------------------------------------

    def lookup(self, prompt: list[int]) -> tuple[int, Entry | None]:
        """The kept row sharing the longest prefix with `prompt`, and that length; at most len(prompt) - 1
        (the last prompt token is always run, for its logits)."""
        p = np.asarray(prompt, dtype=np.int64)
        best, best_n = None, 0
        for e in self.entries:
            m = min(len(e.ids), len(p) - 1)
            if m <= best_n:
                continue
            diff = np.flatnonzero(e.ids[:m] != p[:m])
            n = int(diff[0]) if len(diff) else m
            if n > best_n:
                best, best_n = e, n
        if best is not None:
            self.clock += 1
            best.used = self.clock
            self.hits += 1
            self.reused_tokens += best_n
        return best_n, best

    def put(self, ids: list[int] | np.ndarray, keys: list[torch.Tensor], values: list[torch.Tensor]) -> None:
        """Keep one row: ids (L,), keys/values per layer (kv_heads, L, head_dim), owned (not views of a batch)."""
        ids = np.asarray(ids, dtype=np.int64)
        nbytes = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in zip(keys, values))
        if nbytes > self.budget or len(ids) == 0:
            return
        # a kept row that is a prefix of this one is superseded by it
        self.entries = [e for e in self.entries
                        if not (len(e.ids) <= len(ids) and np.array_equal(e.ids, ids[:len(e.ids)]))]
        self.clock += 1
        self.entries.append(Entry(ids, keys, values, nbytes, self.clock))
        total, dropped = sum(e.nbytes for e in self.entries), set()
        for e in sorted(self.entries, key=lambda e: e.used):  # least recently used first
            if total <= self.budget:
                break
            dropped.add(e)  # hashed by identity (eq=False)
            total -= e.nbytes
        self.entries = [e for e in self.entries if e not in dropped]


def place_prefixes(layers: list, reuse: list[tuple[int, Entry | None]], width: int) -> torch.Tensor:
    """Write each row's reused keys/values right-aligned into columns [width - n, width) of the
    preallocated `layers` (generation.preallocated_layer; buffers already sized), mark them filled.
    Returns the (U, width) attention mask of those columns."""
    U = len(reuse)
    mask = torch.zeros(U, width, dtype=torch.long)
    for layer_i, layer in enumerate(layers):
        for u, (n, e) in enumerate(reuse):
            if n:
                layer.kbuf[u, :, width - n:width] = e.keys[layer_i][:, :n]
                layer.vbuf[u, :, width - n:width] = e.values[layer_i][:, :n]
        layer.n = width
        layer.keys, layer.values = layer.kbuf[:, :, :width], layer.vbuf[:, :, :width]
    for u, (n, _) in enumerate(reuse):
        mask[u, width - n:] = 1
    return mask
