"""BiPA measurements that need new rollouts: acceptance replay and fresh re-evaluation.

Acceptance replay. For an accepted decision (parent P, candidate C, minibatch tasks T), run
the optimizer's own acceptance rule R more times with independent evaluations on T:

    null replay r        rule(P evaluated with seeds A_r,  P evaluated with seeds B_r)
    candidate replay r   rule(P evaluated with seeds A_r,  C evaluated with seeds C_r)

The null is the unchanged parent offered as a candidate: every null acceptance is a false
accept, and the gain it shows is pure selection. (Validation rules compare with the parent's
recorded validation score, exactly as the optimizer did.)

Fresh re-evaluation. Skills are rolled out on every train task and every held-out test task
with `fresh_seeds` new seeds each, the SAME seeds for every skill (common random numbers):
a policy that ignores the skill then shows exactly zero difference, and an LM policy whose
sampling is seeded shows a low-variance paired difference. Results are cached by
(skill version, task, seed): identical texts are identical candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from harnessrl.episode import Episode
from harnessrl.evaluate.acceptance import AcceptanceConfig, decide
from harnessrl.evaluate.skill_runs import META_KEY, derive_seed
from harnessrl.evaluate.stats import Estimate, bootstrap_ci
from harnessrl.harness.base import HarnessSpec, make_harness
from harnessrl.harness.skills import Skill, with_skill
from harnessrl.policies.base import Policy
from harnessrl.rollout.envs import open_env as default_open_env
from harnessrl.rollout.loop import RolloutItem, run_group


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
# Acceptance replay


@dataclass
class ReplayResult:
    """Replays of one logged decision."""

    candidate_id: str
    parent_id: str
    parent_version: str
    iteration: int
    accepted: bool  # what the optimizer decided
    task_ids: list[str]  # the evaluation the rule compared (minibatch, or validation tasks)
    observed_gain: float  # per-task mean gain the optimizer saw (candidate - parent)
    null_accepts: np.ndarray  # (R,) bool: the unchanged parent accepted as a candidate
    null_gains: np.ndarray  # (R,) per-task mean gain shown by the identical candidate
    candidate_accepts: np.ndarray  # (R',) bool: the real candidate accepted again (R' = 0: null-only replay)
    candidate_gains: np.ndarray  # (R',)
    parent_successes: dict[str, list[float]] = field(default_factory=dict)  # task -> parent scores seen in replays

    @property
    def null_accept_rate(self) -> float:
        return float(self.null_accepts.mean()) if self.null_accepts.size else float("nan")

    @property
    def candidate_accept_rate(self) -> float:
        return float(self.candidate_accepts.mean()) if self.candidate_accepts.size else float("nan")

    @property
    def null_gain_given_accept(self) -> float:
        """The gain an identical candidate shows when the rule accepts it: selection alone."""
        return float(self.null_gains[self.null_accepts].mean()) if self.null_accepts.any() else 0.0


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


def score_replay(acc: AcceptanceConfig, plan: ReplayPlan, eps: list[Episode]) -> ReplayResult:
    d, R, n = plan.decision, plan.replays, len(plan.task_ids)
    scores = np.array([e.reward for e in eps], float).reshape(R, len(plan.sides), n)
    got = {side: scores[:, j, :] for j, side in enumerate(plan.sides)}  # side -> (R, n)
    if acc.role == "minibatch":
        observed = (float(d["candidate_score"]) - float(d["parent_score"])) / n
        accepts = lambda x, r: decide(acc, got["a"][r], x).accepted  # noqa: E731
        gain = lambda x, r: float((x - got["a"][r]).mean())  # noqa: E731
    else:
        bar = float(d["parent_score"])
        observed = float(d["candidate_score"]) - bar
        accepts = lambda x, r: decide(acc, bar, x).accepted  # noqa: E731
        gain = lambda x, r: float(x.mean() - bar)  # noqa: E731
    parent_scores = {t: [float(x) for side in plan.sides if side != "c" for x in got[side][:, k]]
                     for k, t in enumerate(plan.task_ids)}
    with_c = "c" in got
    return ReplayResult(
        d["candidate_id"], d["parent_id"], plan.parent.version, int(d["iteration"]), bool(d["accepted"]), plan.task_ids, observed,
        np.array([accepts(got["b"][r], r) for r in range(R)], bool), np.array([gain(got["b"][r], r) for r in range(R)]),
        np.array([accepts(got["c"][r], r) for r in range(R)] if with_c else [], bool),
        np.array([gain(got["c"][r], r) for r in range(R)] if with_c else []), parent_scores)


def run_replays(ev: SkillEvaluator, acc: AcceptanceConfig, plans: list[ReplayPlan]) -> list[ReplayResult]:
    """All plans' rollouts in one batch (one process pool / Ray job), then each decision scored."""
    eps = ev.run([q for p in plans for q in p.requests], {"run": ev.run_id, "role": "replay"}, cache=False)
    out, k = [], 0
    for p in plans:
        out.append(score_replay(acc, p, eps[k:k + len(p.requests)]))
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
