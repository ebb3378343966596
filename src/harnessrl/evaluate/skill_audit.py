"""The rollouts a BiPA audit needs: acceptance replays and fresh re-evaluation (the I/O half).

Acceptance replay. For a logged decision (parent P, candidate C, minibatch tasks T), the
optimizer's own acceptance rule R is run again with independent evaluations on T:

    null replay r        rule(P evaluated with seeds A_r,  P evaluated with seeds B_r)
    candidate replay r   rule(P evaluated with seeds A_r,  C evaluated with seeds C_r)

The null is the unchanged parent offered as a candidate: every null acceptance is a false
accept, and the gain it shows is pure selection. This module plans those requests
(`plan_replay`) and rolls them out (`replay_episodes`); scoring them is pure and lives in
harnessrl.analysis.bipa_replay.

Fresh re-evaluation. Skills are rolled out on every train task and every held-out test task
with `fresh_seeds` new seeds each, the SAME seeds for every skill (common random numbers):
a policy that ignores the skill then shows exactly zero difference, and an LM policy whose
sampling is seeded shows a low-variance paired difference. Results are cached by
(skill version, task, seed): identical texts are identical candidates.

`audit_rollouts(log, ev, cfg)` runs both for a whole optimizer log, in the order the audit
always used (replays, then fresh), and hands the episodes to harnessrl.analysis.bipa.audit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from pydantic import Field

from harnessrl.config import Config
from harnessrl.episode import Episode
from harnessrl.evaluate.acceptance import AcceptanceConfig
from harnessrl.evaluate.skill_runs import META_KEY, SkillRunLog, derive_seed
from harnessrl.evaluate.stats import Estimate, bootstrap_ci
from harnessrl.harness.base import HarnessSpec, make_harness
from harnessrl.harness.skills import Skill, with_skill
from harnessrl.policies.base import Policy
from harnessrl.rollout.envs import open_env as default_open_env
from harnessrl.rollout.loop import RolloutItem, run_group


class AuditConfig(Config):
    replays: int = Field(10, ge=1, description="Replays of each accepted decision (identical candidate and the real one).")
    null_replays: int = Field(2, ge=0, description="Identical-candidate replays of each rejected decision (pooled into the false-accept rate).")
    fresh_seeds: int = Field(4, ge=1, description="Fresh seeds per task for the re-evaluation (shared by every skill).")
    seed: int | None = Field(None, description="Audit seed; default derived from the run's seed (never its rollout seeds).")
    quote_words: int = Field(8, ge=2, description="Read rule: shared word run that counts as quoting.")
    min_span_chars: int = Field(4, ge=1, description="Read rule: shortest code span that counts as acting on a section.")
    max_false_accept: float = Field(0.05, ge=0, le=1, description="A rule whose replayed false-accept rate exceeds this is flagged.")


class SkillEvaluator:
    """Rolls out (skill, task, seed) requests for the audit: cached, stored, in lockstep groups.

    In-process by default. Given the policy's registry spec (`policy_spec`) and `workers` > 1
    or `backend="ray"`, requests go through harnessrl.rollout.backends.run_jobs instead (a
    local process pool or Ray actors; the same seeds give the same episodes either way).
    """

    def __init__(self, policy: Policy, spec: HarnessSpec, tasks: dict[str, Any], *, run_id: str, store: Any = None,
                 open_env: Callable[[Any, int], Any] = default_open_env, progress: Callable[[int], None] | None = None,
                 policy_spec: Any = None, workers: int = 1, backend: str = "local", group_size: int = 16):
        self.policy, self.spec, self.tasks, self.run_id = policy, spec, tasks, run_id
        self.store, self.open_env, self.progress = store, open_env, progress
        self.policy_spec, self.workers, self.backend, self.group_size = policy_spec, workers, backend, group_size
        self.cache: dict[tuple[str, str, int], Episode] = {}
        self.episodes: list[Episode] = []  # every episode this evaluator ran, in order

    def _done(self, eps: list[Episode], meta: dict[str, Any]) -> None:
        for ep in eps:
            ep.metadata[META_KEY] = {**meta, "audit": True, "skill_version": ep.skill_version}
        if self.store is not None and eps:
            self.store.append(eps)  # per chunk: a crash loses at most the chunks in flight
        self.episodes += eps
        if self.progress:
            self.progress(len(eps))

    def _rollout(self, items: list[tuple[Skill, Any, int]], meta: dict[str, Any]) -> list[Episode]:
        specs = {s.version: with_skill(self.spec, s) for s, _, _ in items}
        if self.policy_spec is not None and (self.workers > 1 or self.backend != "local"):
            from harnessrl.rollout.backends import Job, run_jobs

            jobs = [Job(specs[s.version], t, int(seed)) for s, t, seed in items]
            return run_jobs(self.policy_spec, jobs, backend=self.backend, workers=self.workers, group_size=self.group_size,
                            run_id=self.run_id, on_chunk=lambda eps: self._done(eps, meta))
        harnesses = {v: make_harness(sp) for v, sp in specs.items()}
        out: list[Episode] = []
        for k in range(0, len(items), self.group_size):
            chunk = items[k:k + self.group_size]
            eps = run_group(self.policy, [RolloutItem(harnesses[s.version], t, int(seed)) for s, t, seed in chunk],
                            run_id=self.run_id, open_env=self.open_env, key_prefix=f"{len(self.episodes)}-")
            self._done(eps, meta)
            out += eps
        return out

    def run(self, requests: Sequence[tuple[Skill, str, int]], meta: dict[str, Any], *, cache: bool = True) -> list[Episode]:
        """Episodes for each (skill, task id, seed), in request order; with `cache`, a request
        already rolled out (same skill version, task and seed) is answered from the cache."""
        todo: list[int] = []
        planned: set[tuple[str, str, int]] = set()
        for i, (skill, tid, seed) in enumerate(requests):
            if tid not in self.tasks:
                raise KeyError(f"task {tid!r} is not in the audit's task set; known: {', '.join(sorted(self.tasks))}")
            key = (skill.version, tid, int(seed))
            if cache and (key in self.cache or key in planned):
                continue
            planned.add(key)
            todo.append(i)
        todo.sort(key=lambda i: (requests[i][0].version, requests[i][1]))  # one harness per group, tasks together
        eps = self._rollout([(requests[i][0], self.tasks[requests[i][1]], int(requests[i][2])) for i in todo], meta)
        fresh = dict(zip(todo, eps))
        if cache:
            for i, ep in fresh.items():
                self.cache[(requests[i][0].version, requests[i][1], int(requests[i][2]))] = ep
        return [fresh[i] if i in fresh else self.cache[(s.version, t, int(sd))] for i, (s, t, sd) in enumerate(requests)]


# ---------------------------------------------------------------------------------------
# Acceptance replay: the requests and their rollouts


@dataclass
class ReplayPlan:
    """The rollouts one decision's replays need: `replays` x sides x tasks requests."""

    decision: dict[str, Any]
    parent: Skill
    candidate: Skill
    task_ids: list[str]
    replays: int
    sides: list[str]  # "a", "b": the parent evaluated twice (a only for minibatch rules); "c": the candidate
    requests: list[tuple[Skill, str, int]]


def plan_replay(acc: AcceptanceConfig, decision: dict[str, Any], parent: Skill, candidate: Skill, task_ids: list[str],
                replays: int, seed: int, *, with_candidate: bool = True) -> ReplayPlan:
    """R replays of one decision with fresh independent seeds on the tasks its rule compared.

    Minibatch rules: per replay, the parent is evaluated twice (A, B) and the candidate once (C);
    null = rule(A, B), candidate = rule(A, C). Validation rules compare with the parent's
    recorded score: null = rule(bar, B), candidate = rule(bar, C).
    """
    cid = decision["candidate_id"]
    sides = (["a"] if acc.role == "minibatch" else []) + ["b"] + (["c"] if with_candidate else [])
    skill_of = {"a": parent, "b": parent, "c": candidate}
    reqs = [(skill_of[side], t, derive_seed(seed, "replay", cid, r, side, k))
            for r in range(replays) for side in sides for k, t in enumerate(task_ids)]
    return ReplayPlan(decision, parent, candidate, list(task_ids), replays, sides, reqs)


def replay_episodes(ev: SkillEvaluator, plans: list[ReplayPlan]) -> list[list[Episode]]:
    """All plans' rollouts in one batch (one process pool / Ray job); each plan's episodes in request order."""
    eps = ev.run([q for p in plans for q in p.requests], {"run": ev.run_id, "role": "replay"}, cache=False)
    out, k = [], 0
    for p in plans:
        out.append(eps[k:k + len(p.requests)])
        k += len(p.requests)
    return out


# ---------------------------------------------------------------------------------------
# Fresh re-evaluation with common random numbers


@dataclass
class Fresh:
    """Per-(task, seed) scores of each skill version on a fixed set of fresh seeds."""

    task_ids: list[str]
    seeds: list[int]
    scores: dict[str, np.ndarray]  # version -> (tasks * seeds,) rewards, in (task, seed) order
    tokens_in: dict[str, np.ndarray]
    turns: dict[str, np.ndarray]
    episodes: dict[str, list[Episode]]

    def mean(self, version: str) -> float:
        return float(self.scores[version].mean())

    def gain(self, new: str, old: str, seed: int = 0) -> Estimate:
        """Paired mean difference new - old over (task, seed) pairs with a bootstrap CI."""
        return bootstrap_ci(self.scores[new] - self.scores[old], np.mean, seed=seed)

    def delta(self, field_: str, new: str, old: str) -> float:
        arr = getattr(self, field_)
        return float(arr[new].mean() - arr[old].mean())


def fresh_evaluation(ev: SkillEvaluator, skills: Sequence[Skill], splits: dict[str, list[str]], fresh_seeds: int,
                     seed: int) -> dict[str, Fresh]:
    """Every skill on every task of each split ({"train": ids, "test": ids}) with the same fresh seeds."""
    uniq = list({s.version: s for s in skills}.values())
    plan = {role: ([derive_seed(seed, "fresh", role, k) for k in range(fresh_seeds)], ids) for role, ids in splits.items() if ids}
    reqs = [(s, t, sd) for role, (seeds, ids) in plan.items() for s in uniq for t in ids for sd in seeds]
    eps = ev.run(reqs, {"run": ev.run_id, "role": "fresh"})
    out, k = {}, 0
    for role, (seeds, ids) in plan.items():
        n = len(ids) * len(seeds)
        by = {s.version: eps[k + i * n:k + (i + 1) * n] for i, s in enumerate(uniq)}
        k += n * len(uniq)
        out[role] = Fresh(ids, seeds, {v: np.array([e.reward for e in es], float) for v, es in by.items()},
                          {v: np.array([e.tokens_in for e in es], float) for v, es in by.items()},
                          {v: np.array([e.num_turns for e in es], float) for v, es in by.items()}, by)
    return out


# ---------------------------------------------------------------------------------------
# Everything one audit rolls out


@dataclass
class AuditRollouts:
    """The episodes a BiPA audit analyses, besides the optimizer's own (which are in the store).

    plans[i] and replays[i]: one replayed decision and its episodes (request order);
    fresh: "train" (and "test" when there are test tasks) -> the lineage's fresh evaluation.
    """

    seed: int
    lineage_ids: list[str]
    plans: list[ReplayPlan]
    replays: list[list[Episode]]
    fresh: dict[str, Fresh]
    n_episodes: int  # every audit rollout, replays and fresh (cache hits not counted twice)


def audit_seed(log: SkillRunLog, cfg: AuditConfig) -> int:
    """The audit's seed: given, or derived from the run's seed (never one of its rollout seeds)."""
    return cfg.seed if cfg.seed is not None else derive_seed(int(log.header["config"].get("seed", 0)), "bipa-audit")


def audit_rollouts(log: SkillRunLog, ev: SkillEvaluator, cfg: AuditConfig = AuditConfig()) -> AuditRollouts:
    """Replays of every logged decision (full for accepted ones, null-only for the rest), then the
    fresh re-evaluation of the accepted lineage on train and test tasks."""
    acc = AcceptanceConfig.model_validate(log.header["config"]["acceptance"])
    seed = audit_seed(log, cfg)
    tasks = log.header["tasks"]
    seed_id = next(c for c, d in log.candidates.items() if d["parent_id"] is None)
    lineage_ids = [seed_id] + [d["candidate_id"] for d in log.accepted()]
    plans = []
    for d in log.decisions:
        if not log.candidates[d["candidate_id"]].get("skill"):
            continue  # an unparseable rewrite was never evaluated
        n_rep = cfg.replays if d["accepted"] else cfg.null_replays
        if n_rep == 0:
            continue
        compared = log.evaluation(d["candidate_evaluation"])["task_ids"]
        plans.append(plan_replay(acc, d, log.skill(d["parent_id"]), log.skill(d["candidate_id"]), compared,
                                 n_rep, seed, with_candidate=bool(d["accepted"])))
    replays = replay_episodes(ev, plans)
    fresh = fresh_evaluation(ev, [log.skill(c) for c in lineage_ids], {"train": tasks["train"], "test": tasks["test"]},
                             cfg.fresh_seeds, seed)
    return AuditRollouts(seed, lineage_ids, plans, replays, fresh, len(ev.episodes))
