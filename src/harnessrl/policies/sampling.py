"""Per-episode random streams and per-row limits for one batched generation.

    rows = [RowSpec.for_call(run_seed, s.episode_key, s.seed, call_index, cap) for s in states]
    completions = engine.generate(prompts, params, rows=rows)

Why: with one generator for the whole batch, the uniform number a row draws at a step depends
on how many rows were drawn before it, so an episode's sample changes with who else is in its
batch (the group size, the other programs' timing, which calls were pending together). A
program harness makes that visible: eight programs call at their own pace and the lockstep loop
batches whatever is pending. Here each row of a batch draws from its own stream, seeded from
(run seed, a hash of the episode key, the episode's seed, the call's index in the episode), so
an episode's tokens are a function of the run seed and the episode alone — sampled alone or
inside a batch of eight, the same tokens (up to float rounding of the batched forward, which
moves a draw only when a uniform number lands within rounding of a token boundary).

The key is hashed with blake2b rather than Python's `hash`, which is salted per process: a
worker process must draw what the driver would have drawn.

`max_new_tokens` caps one row below the batch's budget (a program's `max_tokens`); a row that
reaches its cap stops as if the budget were spent (not finished).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

import torch

_MASK64 = (1 << 63) - 1  # torch.Generator.manual_seed takes a non-negative 64-bit int


def stream_seed(run_seed: int, episode_key: str, episode_seed: int, call_index: int) -> int:
    """A 63-bit seed for one call of one episode, independent of the process and of the batch."""
    h = hashlib.blake2b(digest_size=8, person=b"harnessrl-rows")
    h.update(struct.pack("<qqq", int(run_seed) & _MASK64, int(episode_seed) & _MASK64, int(call_index)))
    h.update(episode_key.encode("utf-8"))
    return int.from_bytes(h.digest(), "little") & _MASK64


@dataclass(slots=True)
class RowSpec:
    """One row of a batched generation: its own random stream and, optionally, a tighter token cap."""

    generator: torch.Generator | None = None  # None: the row draws from the batch's shared generator
    max_new_tokens: int | None = None  # None: the batch's budget

    @classmethod
    def for_call(cls, run_seed: int, episode_key: str, episode_seed: int, call_index: int,
                 max_new_tokens: int | None = None) -> "RowSpec":
        g = torch.Generator(device="cpu")  # uniforms are drawn on the CPU and moved: one stream on any device
        g.manual_seed(stream_seed(run_seed, episode_key, episode_seed, call_index))
        return cls(g, max_new_tokens)


def row_uniforms(rows: list[RowSpec], shared: torch.Generator | None, device: torch.device) -> torch.Tensor:
    """One uniform number in [0, 1) per row, each from its row's own stream: (B, 1) float32 on `device`.

    Rows without a stream of their own draw from `shared` (on its device), in row order."""
    out = torch.empty(len(rows), 1, dtype=torch.float32)
    for i, row in enumerate(rows):
        if row.generator is not None:
            out[i] = torch.rand((), generator=row.generator)
        else:
            out[i] = torch.rand((), generator=shared, device=shared.device if shared is not None else "cpu").cpu()
    return out.to(device)
