"""What a run id already holds in the store, so that an evaluation run again under it refuses
and a resumed one runs only the cells that are missing.

A cell of an evaluation is (task, harness, seed) under one run id (`records.integrity.CELL_KEY`).
Evaluation episode ids are random, so the store cannot refuse a second copy of a cell by itself;
`run_eval` asks here first. Each evaluation episode carries `metadata[EVAL_META]`, the policy spec
it ran: that is how a resume with another policy is refused and how `records verify` tells
evaluation episodes (one per cell) from training ones (which may repeat a cell).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from harnessrl.config import ConfigError
from harnessrl.episode import Episode, from_arrow
from harnessrl.records import RecordStore
from harnessrl.records.integrity import EVAL_META

Cell = tuple[str, str, int]  # (task_id, harness_id, seed)


def cell_of(task_id: str, harness_id: str, seed: int | None) -> Cell:
    return (task_id, harness_id, int(seed) if seed is not None else -1)


@dataclass
class Stored:
    """The cells a run id holds in a store, and the policies its evaluation episodes ran."""

    run_id: str
    cells: set[Cell] = field(default_factory=set)
    policies: set[str] = field(default_factory=set)
    episodes: int = 0


def stored(store: RecordStore, run_id: str) -> Stored:
    """Read only the key columns: cheap enough to ask before every evaluation."""
    t = store.sql("SELECT task_id, harness_id, seed, metadata FROM episodes WHERE run_id = ?", [run_id])
    out = Stored(run_id, episodes=t.num_rows)
    for task, harness, seed, meta in zip(*(t.column(c).to_pylist() for c in t.column_names)):
        out.cells.add(cell_of(task, harness, seed))
        policy = json.loads(meta).get(EVAL_META) if meta else None
        if policy:
            out.policies.add(policy)
    return out


def check_resumable(have: Stored, policy: str) -> None:
    """A resumed run goes on with the policy it started with: a run of two policies is no evaluation."""
    other = sorted(have.policies - {policy})
    if other:
        raise ConfigError(f"run {have.run_id!r} was evaluated with policy {', '.join(other)}, not {policy}; "
                          "resume it with the same --policy, or choose another run id")


def stored_episodes(store: RecordStore, run_id: str, cells: set[Cell]) -> dict[Cell, Episode]:
    """The stored episode of each of `cells` (the first stored, should a cell be there twice)."""
    out: dict[Cell, Episode] = {}
    for ep in from_arrow(store.sql("SELECT * FROM episodes WHERE run_id = ?", [run_id])):
        key = cell_of(ep.context.task_id, ep.context.harness_id, ep.context.seed)
        if key in cells and key not in out:
            out[key] = ep
    return out


__all__ = ["Cell", "Stored", "cell_of", "check_resumable", "stored", "stored_episodes"]
