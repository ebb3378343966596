"""Agent evaluation: policy x suite x harnesses x seeds -> episodes in the store -> matrices.

    plan = plan_eval("code-v1", ["all"], seeds=3)
    result = run_eval(PolicySpec.parse("oracle"), plan, store, backend="local", workers=2)
    result.cells, result.summary, result.out_of_scope

Which cells run: every (task, harness) the harness can drive and whose capabilities cover the
task's needs (harness.compatibility; e.g. Aider has no shell, so tasks that need one are out
of its scope). Out-of-scope cells are listed with their reason, never silently dropped.
`--harness all` means every built-in harness that drives at least one task of the suite,
minus sealed ones. Sealed tasks/harnesses are refused unless the evaluation IS the seal's
one evaluation (`sealed=`): then the cells come from the manifest and the result is written
once, hash-chained to it.

A run id holds each cell once: `run_eval` refuses a plan whose cells the run id already has in the
store, and with `resume=True` runs only the missing ones and reports the stored and the new together,
so a killed evaluation resumed ends with the same cells as one that was never interrupted (resume.py).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harnessrl.rewards import RewardHook
from harnessrl.rewards import apply as apply_rewards
from harnessrl.rewards import check_tasks
from harnessrl.config import ConfigError
from harnessrl.episode import Episode
from harnessrl.evaluate import seal as sealing
from harnessrl.evaluate.matrix import cell_table, harness_summary
from harnessrl.evaluate.resume import cell_of, check_resumable, stored, stored_episodes
from harnessrl.records.integrity import EVAL_META
from harnessrl.harness.base import Harness, builtin_specs, make_harness
from harnessrl.policies.registry import PolicySpec
from harnessrl.records import RecordStore
from harnessrl.rollout.backends import Job, run_jobs
from harnessrl.rollout.suites import load_suite, pick_tasks, task_id
from harnessrl.tasks.contract import TaskLike


@dataclass
class EvalPlan:
    suite_name: str
    tasks: list[TaskLike]
    harnesses: list[Harness]
    seeds: list[int]
    cells: list[tuple[Any, Harness]]  # in scope, in run order
    out_of_scope: list[tuple[str, str, str]]  # (task_id, harness_id, reason)
    seal: sealing.Seal | None = None

    @property
    def episodes(self) -> int:
        return len(self.cells) * len(self.seeds)


@dataclass
class EvalResult:
    run_id: str
    policy: str
    plan: EvalPlan
    episodes: list[Episode]
    cells: list[dict[str, Any]]
    summary: list[dict[str, Any]]
    wall_s: float
    sealed_record: str = ""
    ks: tuple[int, ...] = (1,)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def out_of_scope(self) -> list[tuple[str, str, str]]:
        return self.plan.out_of_scope


def scope_reason(harness: Harness, task: TaskLike) -> str | None:
    if hasattr(harness, "compatibility"):
        return harness.compatibility(task)
    if harness.supports(task):
        return None
    return f"{harness.style} drives {', '.join(harness.env_kinds)} tasks, not {getattr(task, 'kind', '?')!r}"


def _harnesses(names: Sequence[str], kinds: set[str], seals_dir: Any) -> tuple[list[Harness], list[str]]:
    """Harness objects for `names` ("all" = built-ins driving a kind of the suite); sealed ones out of "all"."""
    sealed_ids = {h["id"] for s in sealing.all_seals(seals_dir) for h in s.manifest["harnesses"]}
    out, skipped = [], []
    for name in names:
        if name == "all":
            for hid in builtin_specs():
                h = make_harness(hid)
                if set(h.env_kinds) & kinds and hid not in {x.id for x in out}:
                    if hid in sealed_ids:
                        skipped.append(hid)
                    else:
                        out.append(h)
        else:
            h = make_harness(name)  # a built-in id, a variant id or a spec file
            if h.id in {x.id for x in out}:
                raise ConfigError(f"harness {h.id!r} is listed twice")
            out.append(h)
    if not out:
        raise ConfigError(f"no harness drives this suite's task kinds ({', '.join(sorted(kinds))})")
    return out, skipped


def plan_eval(suite: str | Any, harnesses: Sequence[str] = ("all",), seeds: int | Sequence[int] = 1,
              tasks: Sequence[str] | None = None, sealed: str | None = None, seals_dir: Any = None) -> EvalPlan:
    suite_obj = load_suite(suite) if isinstance(suite, str) else suite
    all_tasks = list(suite_obj)
    seal = None
    if sealed is not None:
        seal = sealing.load_seal(sealed, seals_dir)
        problems = sealing.verify_seal(sealed, directory=seals_dir, tasks=all_tasks)
        if problems:
            raise sealing.SealedError(f"seal {sealed!r} is not intact: {'; '.join(problems)}")
        if seal.eval_path.exists():
            raise sealing.SealedError(f"seal {sealed!r} was already evaluated ({seal.eval_path}); a sealed split is evaluated once")
        if seal.task_ids:
            tasks = sorted(seal.task_ids)
        if seal.harness_ids:
            harnesses = sorted(seal.harness_ids)
    if tasks:
        all_tasks = pick_tasks(suite_obj, list(tasks))  # names a rejected task's reason
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    if not seed_list:
        raise ConfigError("at least one seed is needed")
    hs, skipped = _harnesses(list(harnesses), {t.kind for t in all_tasks}, seals_dir)
    if seal is None:  # an ordinary evaluation never peeks at a sealed split
        sealing.check_not_sealed(tasks=all_tasks, harnesses=hs, directory=seals_dir)
    cells, out = [], [(task_id(t), h, "sealed (evaluated only through its seal)") for h in skipped for t in all_tasks]
    for h in hs:
        for t in all_tasks:
            reason = scope_reason(h, t)
            if reason is None:
                cells.append((t, h))
            else:
                out.append((task_id(t), h.id, reason))
    return EvalPlan(getattr(suite_obj, "name", str(suite)), all_tasks, hs, seed_list, cells, out, seal)


def default_run_id(spec: PolicySpec) -> str:
    # the random tail: two evaluations started in the same second must not share (and be refused) a run id
    return f"eval-{spec.name}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def run_eval(policy: PolicySpec | str, plan: EvalPlan, store: RecordStore, *, backend: str = "local", workers: int = 1,
             group_size: int = 1, run_id: str | None = None, ks: Sequence[int] = (1,), address: str | None = None,
             on_progress: Callable[[int], None] | None = None, rewards: RewardHook | None = None,
             resume: bool = False) -> EvalResult:
    """Run the plan's cells, append episodes to `store` as chunks finish, compute the matrices. `rewards` (reward
    functions on top of the verifier) and the tasks' own (task.toml reward_funcs) run here, on the host, on each
    graded chunk before it is stored. Cells `run_id` already holds in `store` are refused, or with `resume` kept
    and not run again (their stored episodes are in the result)."""
    spec = PolicySpec.parse(policy) if isinstance(policy, str) else policy
    run_id = run_id or default_run_id(spec)
    if not plan.cells:
        raise ConfigError("nothing to run: every task x harness cell is out of scope "
                          + "; ".join(f"{t} x {h}: {r}" for t, h, r in plan.out_of_scope[:5]))
    order = [cell_of(task_id(t), h.id, s) for t, h in plan.cells for s in plan.seeds]
    have = stored(store, run_id)
    done_keys = set(order) & have.cells
    if done_keys and not resume:
        raise ConfigError(f"run {run_id!r} already holds {len(done_keys)} of these {len(order)} episodes in {store.root}; "
                          "resume it (resume=True, `harnessrl eval --resume`) to run only the missing ones, or choose "
                          "another run id")
    if resume:
        check_resumable(have, str(spec))
    done = stored_episodes(store, run_id, done_keys) if done_keys else {}
    jobs = [Job(h.spec, t, s) for t, h in plan.cells for s in plan.seeds if cell_of(task_id(t), h.id, s) not in done]

    check_tasks([t for t, _ in plan.cells])  # the tasks' own reward functions import, before any rollout

    def commit(chunk: list[Episode]) -> None:
        apply_rewards(rewards or RewardHook(), chunk)  # the run's and each task's reward functions
        for ep in chunk:  # marks an evaluation episode: one per cell (records verify) and its policy (resume)
            ep.metadata[EVAL_META] = str(spec)
        store.append(chunk)
        if on_progress is not None:
            on_progress(len(chunk))

    t0 = time.perf_counter()
    if done and on_progress is not None:
        on_progress(len(done))
    fresh = run_jobs(spec, jobs, backend=backend, workers=workers, group_size=group_size, run_id=run_id,
                     address=address, on_chunk=commit) if jobs else []
    # stored and new episodes in plan order: a resumed run's result reads like an uninterrupted one's
    by_cell = done | {cell_of(e.context.task_id, e.context.harness_id, e.context.seed): e for e in fresh}
    episodes = [by_cell[k] for k in order if k in by_cell]
    ks = tuple(sorted(set(ks) | {1}))
    result = EvalResult(run_id, str(spec), plan, episodes, cell_table(episodes, ks), harness_summary(episodes, ks),
                        time.perf_counter() - t0, ks=ks, info={"resumed": len(done)})
    if plan.seal is not None:
        summary = {"policy": str(spec), "run_id": run_id, "summary": result.summary, "cells": result.cells,
                   "out_of_scope": plan.out_of_scope}
        result.sealed_record = str(sealing.write_sealed_eval(plan.seal, store, [e.episode_id for e in episodes], summary))
    return result
