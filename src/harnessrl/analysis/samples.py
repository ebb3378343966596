"""Episode records as flat arrays, the input of every estimator in `analysis`.

One row per episode: its context (task, harness), who produced it (policy, run), its
verdict (reward, success, outcome) and two trajectory log-probabilities:

- `logprob`: log pi(trajectory) under the policy that sampled it. Read from
  `metadata["logprob"]` if present, else the sum of the turns' log-probs over generated
  tokens (loss_mask = 1); NaN when the episode has neither (e.g. non-LM policies).
- `ref_logprob`: log pi_ref(trajectory) under the harness's reference policy, from
  `metadata["ref_logprob"]` (a trainer that scores with the LoRA adapter disabled writes it);
  NaN when absent. With both, KL(pi || pi_ref) and the mismatch KL(pi || pi*_h) are estimable.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np

from harnessrl.episode import Episode

if TYPE_CHECKING:
    from harnessrl.records import RecordStore


@dataclass(frozen=True)
class Samples:
    """Columns of equal length N; string columns are numpy object arrays."""

    task: np.ndarray
    harness: np.ndarray
    policy: np.ndarray
    run: np.ndarray
    level: np.ndarray  # int; -1 where the record has no level
    reward: np.ndarray
    success: np.ndarray
    outcome: np.ndarray
    logprob: np.ndarray
    ref_logprob: np.ndarray

    def __post_init__(self) -> None:
        n = {f.name: len(getattr(self, f.name)) for f in fields(self)}
        if len(set(n.values())) > 1:
            raise ValueError(f"Samples columns differ in length: {n}")

    def __len__(self) -> int:
        return len(self.reward)

    def select(self, mask: np.ndarray) -> "Samples":
        return Samples(**{f.name: getattr(self, f.name)[mask] for f in fields(self)})

    def where(self, *, policy: str | list[str] | None = None, harness: str | list[str] | None = None, run: str | list[str] | None = None) -> "Samples":
        """Rows whose policy / harness / run is one of the given values (None = any)."""
        mask = np.ones(len(self), dtype=bool)
        for col, want in (("policy", policy), ("harness", harness), ("run", run)):
            if want is not None:
                values = [want] if isinstance(want, str) else list(want)
                mask &= np.isin(getattr(self, col), values)
        return self.select(mask)

    def values(self, column: str) -> list[str]:
        return sorted(set(getattr(self, column).tolist()))

    @property
    def has_logprobs(self) -> bool:
        return bool(len(self)) and bool(np.all(np.isfinite(self.logprob)) and np.all(np.isfinite(self.ref_logprob)))

    # -- builders ------------------------------------------------------------------------

    @classmethod
    def from_columns(cls, **columns: object) -> "Samples":
        """Build from arrays; omitted columns get defaults (reward required)."""
        reward = np.asarray(columns.pop("reward"), dtype=np.float64)
        n = len(reward)

        def text(name: str, default: str = "") -> np.ndarray:
            v = columns.pop(name, None)
            return np.full(n, default, dtype=object) if v is None else np.asarray(v, dtype=object)

        def num(name: str, default: float) -> np.ndarray:
            v = columns.pop(name, None)
            return np.full(n, default, dtype=np.float64) if v is None else np.asarray(v, dtype=np.float64)

        success = columns.pop("success", None)
        level = columns.pop("level", None)
        out = cls(
            task=text("task"),
            harness=text("harness"),
            policy=text("policy"),
            run=text("run"),
            level=np.full(n, -1, dtype=np.int64) if level is None else np.asarray(level, dtype=np.int64),
            reward=reward,
            success=(reward > 0) if success is None else np.asarray(success, dtype=bool),
            outcome=text("outcome"),
            logprob=num("logprob", np.nan),
            ref_logprob=num("ref_logprob", np.nan),
        )
        if columns:
            raise ValueError(f"Samples.from_columns: unknown columns {sorted(columns)}")
        return out

    @classmethod
    def from_episodes(cls, episodes: list[Episode]) -> "Samples":
        def lp(e: Episode) -> float:
            if "logprob" in e.metadata:
                return float(e.metadata["logprob"])
            tokens = sum(int(t.loss_mask.sum()) for t in e.turns)
            return float(sum(float((t.logprobs * t.loss_mask).sum()) for t in e.turns)) if tokens else np.nan

        return cls.from_columns(
            task=[e.context.task_id for e in episodes],
            harness=[e.context.harness_id for e in episodes],
            policy=[e.policy_id for e in episodes],
            run=[e.run_id for e in episodes],
            level=[-1 if e.context.level is None else e.context.level for e in episodes],
            reward=[e.reward for e in episodes],
            success=[e.success for e in episodes],
            outcome=[e.outcome for e in episodes],
            logprob=[lp(e) for e in episodes],
            ref_logprob=[float(e.metadata.get("ref_logprob", np.nan)) for e in episodes],
        )

    @classmethod
    def from_store(cls, store: "RecordStore | str | os.PathLike", where: str | None = None) -> "Samples":
        """Read the columns through DuckDB (token arrays are summed there, never materialised)."""
        from harnessrl.records import RecordStore

        s = store if isinstance(store, RecordStore) else RecordStore(store, create=False, verify="size")
        query = f"""
            SELECT task_id, harness_id, policy_id, run_id, coalesce(level, -1) AS level, reward, success, outcome, metadata,
                   list_sum(list_transform(turns, lambda t: list_sum(
                       list_transform(list_zip(t.logprobs, t.loss_mask), lambda z: z[1] * z[2])))) AS turn_logprob,
                   list_sum(list_transform(turns, lambda t: list_sum(t.loss_mask))) AS generated
            FROM episodes {'WHERE ' + where if where else ''}
        """
        t = s.sql(query).to_pydict()
        meta = [json.loads(m) if m else {} for m in t["metadata"]]
        logprob = [
            float(m["logprob"]) if "logprob" in m else (float(lp) if g and lp is not None else np.nan)
            for m, lp, g in zip(meta, t["turn_logprob"], t["generated"])
        ]
        return cls.from_columns(
            task=t["task_id"],
            harness=t["harness_id"],
            policy=t["policy_id"],
            run=t["run_id"],
            level=t["level"],
            reward=t["reward"],
            success=t["success"],
            outcome=t["outcome"],
            logprob=logprob,
            ref_logprob=[float(m.get("ref_logprob", np.nan)) for m in meta],
        )
