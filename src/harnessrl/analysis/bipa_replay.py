"""BiPA acceptance replay, scored: what re-running a logged decision's rule says (pure).

The rollouts come from harnessrl.evaluate.skill_audit (`plan_replay`, `replay_episodes`): per
replay r the parent evaluated twice (A_r, B_r; A only for minibatch rules) and the candidate
once (C_r). Here each decision's episodes become accept/gain arrays:

    null replay r        rule(A_r, B_r)   the unchanged parent as a candidate: a false accept
    candidate replay r   rule(A_r, C_r)   the real candidate again

(Validation rules compare with the parent's recorded validation score, as the optimizer did.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harnessrl.episode import Episode
from harnessrl.evaluate.acceptance import AcceptanceConfig, decide
from harnessrl.evaluate.skill_audit import ReplayPlan


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


def score_replay(acc: AcceptanceConfig, plan: ReplayPlan, eps: list[Episode]) -> ReplayResult:
    """One decision's replays scored; eps: its plan's episodes in request order (replays x sides x tasks)."""
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
