"""Evaluating skills, and the optimizer's decision log that an audit replays.

Where an optimizer run lives:

    record store                 every episode, with metadata["skillopt"] = {run, candidate,
                                 parent, role, iteration, evaluation} (queryable with DuckDB)
    <run_dir>/optimizer_log.jsonl   one JSON event per line: header (config, tasks, harness,
                                 policy, seed skill), candidate (full skill text, parent,
                                 operator), evaluation (tasks, seeds, episode ids, scores),
                                 decision (rule, scores compared, accepted), end

Why two places: episodes are the one record type and belong in the store, where every other
analysis can read them; candidates and decisions are not episodes, and an audit must be
able to trust that none was dropped or edited. So the log is append-only and hash-chained:
each line carries `sha256(prev_hash + canonical JSON of the event)`, and the `end` event
carries the chain head and the episode count. `read_log` verifies the chain, names the first
line that does not verify, and reports a run without `end` as incomplete (a crash).
Evaluations list their episode ids, so the audit also checks the store holds all of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harnessrl.config import ConfigError
from harnessrl.episode import Episode
from harnessrl.harness.base import HarnessSpec, make_harness
from harnessrl.harness.skills import Skill, with_skill
from harnessrl.policies.base import Policy
from harnessrl.rollout.envs import open_env as default_open_env
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.tasks.contract import TaskLike

LOG_NAME = "optimizer_log.jsonl"
META_KEY = "skillopt"


def derive_seed(base: int, *labels: Any) -> int:
    """A rollout seed from a run seed and labels (iteration, role, ...): stable, independent-looking."""
    h = hashlib.sha256(json.dumps([base, *labels], default=str).encode()).digest()
    return int.from_bytes(h[:4], "little") & 0x7FFFFFFF


def run_skill(
    policy: Policy,
    spec: HarnessSpec,
    skill: Skill | None,
    tasks: Sequence[TaskLike],
    seeds: Sequence[int],
    *,
    run_id: str,
    meta: dict[str, Any],
    store: Any = None,
    open_env: Callable[[Any, int], Any] = default_open_env,
) -> list[Episode]:
    """Roll out `policy` under `spec` carrying `skill` on tasks[i] with seeds[i].

    Each episode gets `metadata["skillopt"] = meta` and is appended to `store` (a RecordStore)
    when one is given. Returns the episodes in task order.
    """
    if len(tasks) != len(seeds):
        raise ValueError(f"one seed per task: {len(tasks)} tasks, {len(seeds)} seeds")
    harness = make_harness(with_skill(spec, skill))
    episodes = run_group(policy, [RolloutItem(harness, t, int(s)) for t, s in zip(tasks, seeds)],
                         run_id=run_id, open_env=open_env)
    for ep in episodes:
        ep.metadata[META_KEY] = dict(meta)
    if store is not None and episodes:
        store.append(episodes)
    return episodes


# ---------------------------------------------------------------------------------------
# The decision log


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


class SkillLogWriter:
    """Append-only, hash-chained JSONL; every line is fsynced (a crash loses at most one event)."""

    def __init__(self, run_dir: str | Path):
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / LOG_NAME
        if self.path.exists() and self.path.stat().st_size > 0:
            raise ConfigError(f"{self.path} already exists; give a new run directory (optimizer logs are never overwritten)")
        self.head = ""
        self.seq = 0
        self._f = open(self.path, "a", encoding="utf-8")

    def write(self, kind: str, **data: Any) -> dict[str, Any]:
        event = {"seq": self.seq, "kind": kind, "time": time.time(), "data": data}
        digest = hashlib.sha256((self.head + _canon(event)).encode()).hexdigest()
        line = {**event, "prev": self.head, "sha256": digest}
        self._f.write(_canon(line) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())
        self.head, self.seq = digest, self.seq + 1
        return line

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()


@dataclass
class SkillRunLog:
    """A parsed, verified optimizer log."""

    path: Path
    header: dict[str, Any]
    candidates: dict[str, dict[str, Any]] = field(default_factory=dict)  # candidate id -> event data
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    head: str = ""

    @property
    def complete(self) -> bool:
        return self.end is not None

    @property
    def run_id(self) -> str:
        return self.header["run_id"]

    def skill(self, candidate_id: str) -> Skill | None:
        data = self.candidates[candidate_id].get("skill")
        return None if data is None else Skill.from_json(data)

    def skills_by_version(self) -> dict[str, Skill]:
        return {c["version"]: Skill.from_json(c["skill"]) for c in self.candidates.values() if c.get("skill")}

    def accepted(self) -> list[dict[str, Any]]:
        return [d for d in self.decisions if d["accepted"]]

    def evaluation(self, eval_id: str) -> dict[str, Any]:
        for e in self.evaluations:
            if e["evaluation_id"] == eval_id:
                return e
        raise KeyError(f"{self.path}: no evaluation {eval_id!r}")

    def episode_ids(self) -> list[str]:
        return [i for e in self.evaluations for i in e["episode_ids"]]


def read_log(run_dir: str | Path) -> SkillRunLog:
    """Read and verify `<run_dir>/optimizer_log.jsonl` (or a path to the log itself)."""
    path = Path(run_dir)
    if path.is_dir():
        path = path / LOG_NAME
    if not path.is_file():
        raise ConfigError(f"no optimizer log at {path}; give the run directory a skill optimizer wrote "
                          f"(it holds {LOG_NAME})")
    head, log = "", None
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.endswith("\n"):
                break  # a torn last line from a crash: everything before it is intact
            try:
                line = json.loads(raw)
                event = {k: line[k] for k in ("seq", "kind", "time", "data")}
                ok = line["prev"] == head and line["sha256"] == hashlib.sha256((head + _canon(event)).encode()).hexdigest()
            except (json.JSONDecodeError, KeyError, TypeError):
                ok = False
            if not ok:
                raise ConfigError(f"{path}:{lineno}: the hash chain does not verify; the log was edited or corrupted "
                                  "after it was written, so an audit of it cannot be trusted")
            head = line["sha256"]
            kind, data = line["kind"], line["data"]
            if log is None:
                if kind != "header":
                    raise ConfigError(f"{path}:1: the first event must be the run header, found {kind!r}")
                log = SkillRunLog(path=path, header=data)
            elif kind == "candidate":
                log.candidates[data["candidate_id"]] = data
            elif kind == "evaluation":
                log.evaluations.append(data)
            elif kind == "decision":
                log.decisions.append(data)
            elif kind == "end":
                log.end = data
    if log is None:
        raise ConfigError(f"{path}: empty optimizer log")
    log.head = head
    return log
