"""The agentic-coding recipe's episodes outside training: greedy evaluations, and the probe that
picks GSPO's tasks.

GSPO learns only from groups whose outcomes differ (a group all solved or all failed has zero
advantage everywhere). A small warm-started model solves most training tasks never and a few
always, so training on every task spends most rollouts on constant groups. The probe samples
each training task `probe_samples` times from the start model (temperature as in training,
seeds 20_000+s, distinct from the evaluation seeds 10_000+s) and `gspo_tasks: sometimes` keeps
the tasks it solved sometimes (0 < rate < 1), topped up to one update's worth with the tasks
nearest to a rate of 1/2 when there are too few.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessrl.episode import Episode
from harnessrl.harness.base import Harness
from harnessrl.policies.lm import LMPolicy
from harnessrl.records import RecordStore
from harnessrl.recipes.stages import json_stage
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.tasks.contract import TaskLike
from harnessrl.train.tasks import task_id

#: First episode seed of each kind: evaluations and the probe never share a seed.
EVAL_SEED, PROBE_SEED = 10_000, 20_000


def stored(store: RecordStore, ids: list[str]) -> list[Episode]:
    if not ids:
        return []
    quoted = ",".join("'" + i.replace("'", "''") + "'" for i in ids)
    return store.episodes(f"episode_id IN ({quoted})")


def solve_rate(store: RecordStore, ids: list[str]) -> float:
    eps = stored(store, ids)
    return sum(e.success for e in eps) / max(1, len(eps))


def episodes(policy: LMPolicy, harnesses: list[Harness], tasks: list[TaskLike], seeds: int, run_id: str,
             store: RecordStore, group: int, *, temperature: float = 0.0, first_seed: int = EVAL_SEED,
             tag: str = "eval") -> list[str]:
    """Episodes of `policy` on every (harness, task, seed), stored once under `run_id` (idempotent on
    resume: a finished set is not run again). Sampling is reseeded, so a rerun draws the same episodes."""
    done = set(store.sql("SELECT episode_id FROM episodes WHERE run_id = ?", [run_id]).column("episode_id").to_pylist())
    items = [RolloutItem(h, t, first_seed + s) for h in harnesses for t in tasks for s in range(seeds)]
    ids = [f"{run_id}-{i:05d}" for i in range(len(items))]
    if set(ids) <= done:
        return ids
    policy.cfg = policy.cfg.model_copy(update={"temperature": temperature})
    policy.reseed(first_seed)
    for lo in range(0, len(items), group):  # bounded lockstep groups: memory, and a crash loses little
        eps: list[Episode] = run_group(policy, items[lo:lo + group], run_id=run_id, key_prefix=f"{run_id}-{lo}-")
        for k, ep in enumerate(eps):
            ep.episode_id = ids[lo + k]
            ep.metadata[tag] = True
        store.append([e for e in eps if e.episode_id not in done])
    return ids


def evaluate(policy: LMPolicy, harnesses: list[Harness], tasks: list[TaskLike], seeds: int, run_id: str,
             store: RecordStore, group: int) -> list[str]:
    """Greedy episodes of `policy` on every (task, harness, seed)."""
    return episodes(policy, harnesses, tasks, seeds, run_id, store, group)


def probe(policy: LMPolicy, harnesses: list[Harness], tasks: list[TaskLike], samples: int, temperature: float,
          store: RecordStore, group: int) -> dict[str, Any]:
    """Sampled episodes of the start model on every training task: {task id: solved fraction} and the ids."""
    ids = episodes(policy, harnesses, tasks, samples, "probe", store, group, temperature=temperature,
                   first_seed=PROBE_SEED, tag="probe")
    solved: dict[str, list[bool]] = defaultdict(list)
    for e in stored(store, ids):
        solved[e.context.task_id].append(bool(e.success))
    rates = {task_id(t): sum(solved[task_id(t)]) / max(1, len(solved[task_id(t)])) for t in tasks}
    return {"rates": rates, "samples": samples, "episodes": len(ids), "temperature": temperature,
            "seeds": [PROBE_SEED, PROBE_SEED + samples - 1]}


def choose_tasks(rates: dict[str, float], per_update: int) -> dict[str, str]:
    """{task id: why it trains} in training order: every task with 0 < rate < 1 ("mixed"), then,
    when fewer than `per_update`, the others nearest a rate of 1/2 ("top-up"; ties: the higher
    rate, then split order). A task always solved or never solved in the probe gives a constant
    group unless sampling in training differs, so it is only there to fill the update."""
    order = {t: i for i, t in enumerate(rates)}
    mixed = [t for t, r in rates.items() if 0.0 < r < 1.0]
    rest = sorted((t for t in rates if t not in mixed), key=lambda t: (abs(rates[t] - 0.5), -rates[t], order[t]))
    chosen = {t: "mixed" for t in mixed}
    chosen.update({t: "top-up" for t in rest[:max(0, per_update - len(mixed))]})
    return chosen


def probe_rows(probe_info: dict[str, Any], chosen: dict[str, str]) -> list[dict[str, Any]]:
    """One row per training task for the report and results.json."""
    n = probe_info["episodes"] // max(1, len(probe_info["rates"]))  # episodes per task (samples x harnesses)
    return [{"task": t, "solved": f"{round(r * n)}/{n}", "rate": r, "GSPO": chosen.get(t, "-")}
            for t, r in probe_info["rates"].items()]


def gspo_tasks(cfg: Any, out: Path, start_policy: Callable[[], LMPolicy], harnesses: list[Harness], train: list[TaskLike],
               store: RecordStore, group: int, progress: Callable[[str, int, int | None], None]) -> dict[str, Any]:
    """The tasks GSPO trains on (`cfg`: the recipe's config), decided once — a stage file, so a resumed
    run trains on the same ones: {"tasks": ids in training order, "why": {id: mixed | top-up | all},
    "probe": the probe's rates or None, "rule": cfg.gspo_tasks}."""
    def decide() -> dict[str, Any]:
        info = None
        if cfg.probe_samples:  # sampled as in training, through the training harnesses only
            progress("probe before GSPO", 0, 1)
            info = probe(start_policy(), harnesses, train, cfg.probe_samples, cfg.temperature, store, group)
            progress("probe before GSPO", 1, 1)
        ids = [task_id(t) for t in train]
        why = choose_tasks(info["rates"], cfg.tasks_per_update) if cfg.gspo_tasks == "sometimes" else dict.fromkeys(ids, "all")
        return {"tasks": list(why), "why": why, "probe": info, "rule": cfg.gspo_tasks}
    return json_stage(out, "gspo_tasks", decide)
