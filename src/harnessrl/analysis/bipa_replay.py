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
    """Rolls out (skill, task, seed) requests for the audit, batched per skill, cached, stored."""

    def __init__(self, policy: Policy, spec: HarnessSpec, tasks: dict[str, Any], *, run_id: str, store: Any = None,
                 open_env: Callable[[Any, int], Any] = default_open_env, progress: Callable[[int], None] | None = None):
        self.policy, self.spec, self.tasks, self.run_id = policy, spec, tasks, run_id
        self.store, self.open_env, self.progress = store, open_env, progress
        self.cache: dict[tuple[str, str, int], Episode] = {}
        self.episodes: list[Episode] = []  # every episode this evaluator ran, in order

    def run(self, requests: Sequence[tuple[Skill, str, int]], meta: dict[str, Any], *, cache: bool = True) -> list[Episode]:
        """Episodes for each (skill, task id, seed), in request order. Uncached ones are rolled
        out in one group per skill version (lockstep batches for LM policies)."""
        missing: dict[str, list[int]] = {}  # version -> indices of requests to roll out
        planned: set[tuple[str, str, int]] = set()
        for i, (skill, tid, seed) in enumerate(requests):
            if tid not in self.tasks:
                raise KeyError(f"task {tid!r} is not in the audit's task set; known: {', '.join(sorted(self.tasks))}")
            key = (skill.version, tid, int(seed))
            if cache and (key in self.cache or key in planned):
                continue
            planned.add(key)
            missing.setdefault(skill.version, []).append(i)
        fresh: dict[int, Episode] = {}
        for version, idx in missing.items():
            harness = make_harness(with_skill(self.spec, requests[idx[0]][0]))
            eps = run_group(self.policy, [RolloutItem(harness, self.tasks[requests[i][1]], int(requests[i][2])) for i in idx],
                            run_id=self.run_id, open_env=self.open_env)
            for i, ep in zip(idx, eps):
                ep.metadata[META_KEY] = {**meta, "audit": True, "skill_version": version}
                if cache:
                    self.cache[(version, requests[i][1], int(requests[i][2]))] = ep
                fresh[i] = ep
            if self.store is not None and eps:
                self.store.append(eps)
            self.episodes += eps
            if self.progress:
                self.progress(len(eps))
        return [fresh[i] if i in fresh else self.cache[(s.version, t, int(sd))] for i, (s, t, sd) in enumerate(requests)]


# ---------------------------------------------------------------------------------------
# Acceptance replay


@dataclass
class ReplayResult:
    """Replays of one logged decision."""

    candidate_id: str
    parent_id: str
    iteration: int
    task_ids: list[str]
    observed_gain: float  # per-task mean gain the optimizer saw (candidate - parent)
    null_accepts: np.ndarray  # (R,) bool: the unchanged parent accepted as a candidate
    null_gains: np.ndarray  # (R,) per-task mean gain shown by the identical candidate
    candidate_accepts: np.ndarray  # (R,) bool: the real candidate accepted again
    candidate_gains: np.ndarray  # (R,)
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


def replay_decision(ev: SkillEvaluator, acc: AcceptanceConfig, decision: dict[str, Any], parent: Skill, candidate: Skill,
                    task_ids: list[str], replays: int, seed: int, validation_ids: list[str]) -> ReplayResult:
    """R null replays and R candidate replays of one decision, all with fresh independent seeds."""
    it, cid = int(decision["iteration"]), decision["candidate_id"]
    meta = {"run": ev.run_id, "candidate": cid, "parent": decision["parent_id"], "iteration": it}
    parent_scores: dict[str, list[float]] = {}
    null_acc, null_gain, cand_acc, cand_gain = [], [], [], []
    if acc.role == "minibatch":
        m = len(task_ids)
        ob = (float(decision["candidate_score"]) - float(decision["parent_score"])) / m
        reqs: list[tuple[Skill, str, int]] = []
        for r in range(replays):
            for side, skill in (("a", parent), ("b", parent), ("c", candidate)):
                reqs += [(skill, t, derive_seed(seed, "replay", cid, r, side, k)) for k, t in enumerate(task_ids)]
        eps = ev.run(reqs, {**meta, "role": "replay"}, cache=False)
        for r in range(replays):
            a, b, c = (np.array([e.reward for e in eps[(3 * r + j) * m:(3 * r + j + 1) * m]]) for j in range(3))
            for t, xa, xb in zip(task_ids, a, b):
                parent_scores.setdefault(t, []).extend([float(xa), float(xb)])
            null_acc.append(decide(acc, a, b).accepted)
            null_gain.append(float((b - a).mean()))
            cand_acc.append(decide(acc, a, c).accepted)
            cand_gain.append(float((c - a).mean()))
    else:
        bar = float(decision["parent_score"])
        ob = float(decision["candidate_score"]) - bar
        n = len(validation_ids)
        reqs = []
        for r in range(replays):
            for side, skill in (("b", parent), ("c", candidate)):
                reqs += [(skill, t, derive_seed(seed, "replay", cid, r, side, k)) for k, t in enumerate(validation_ids)]
        eps = ev.run(reqs, {**meta, "role": "replay"}, cache=False)
        for r in range(replays):
            b, c = (np.array([e.reward for e in eps[(2 * r + j) * n:(2 * r + j + 1) * n]]) for j in range(2))
            for t, x in zip(validation_ids, b):
                parent_scores.setdefault(t, []).append(float(x))
            null_acc.append(decide(acc, bar, b).accepted)
            null_gain.append(float(b.mean() - bar))
            cand_acc.append(decide(acc, bar, c).accepted)
            cand_gain.append(float(c.mean() - bar))
        task_ids = validation_ids
    return ReplayResult(cid, decision["parent_id"], it, list(task_ids), ob, np.array(null_acc, bool), np.array(null_gain),
                        np.array(cand_acc, bool), np.array(cand_gain), parent_scores)


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


def fresh_evaluation(ev: SkillEvaluator, skills: Sequence[Skill], task_ids: list[str], fresh_seeds: int, seed: int,
                     role: str) -> Fresh:
    seeds = [derive_seed(seed, "fresh", role, k) for k in range(fresh_seeds)]
    uniq = list({s.version: s for s in skills}.values())
    reqs = [(s, t, sd) for s in uniq for t in task_ids for sd in seeds]
    eps = ev.run(reqs, {"run": ev.run_id, "role": f"fresh_{role}"})
    n = len(task_ids) * len(seeds)
    by = {s.version: eps[i * n:(i + 1) * n] for i, s in enumerate(uniq)}
    return Fresh(task_ids, seeds,
                 {v: np.array([e.reward for e in es], float) for v, es in by.items()},
                 {v: np.array([e.tokens_in for e in es], float) for v, es in by.items()},
                 {v: np.array([e.num_turns for e in es], float) for v, es in by.items()}, by)
