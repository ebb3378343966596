"""Audit a suite's grader: run every applicable scripted attack on every task x harness.

    result = run_audit("code-v1", store, harnesses=["all"], attacks=None, workers=2)
    result.cells      [AuditCell(task_id, harness_id, attack, verdict, ...)]
    result.holes      the cells an attack scored on (verdict "scored")

Verdicts: "scored" (the grader said solved for code the attack never fixed: a hole),
"blocked" (anything else), "n/a" (the attack cannot be expressed there: the harness lacks a
capability, the task is out of the harness's scope, or the task gives the attack nothing).
Episodes go to the record store like any evaluation's, one run per attack
(`<run_id>-<attack>`), so each verdict's evidence is an episode id you can open.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harnessrl.config import ConfigError
from harnessrl.evaluate.run import plan_eval, run_eval
from harnessrl.policies.adversaries import ATTACKS, make_attack
from harnessrl.policies.registry import PolicySpec
from harnessrl.records import RecordStore
from harnessrl.rollout.suites import task_id
from harnessrl.tasks.isolation import grading_isolation

VERDICTS = ("scored", "blocked", "n/a")
EVIDENCE_CHARS = 400


@dataclass(frozen=True)
class AuditCell:
    task_id: str
    harness_id: str
    attack: str
    verdict: str  # one of VERDICTS
    outcome: str = ""  # the grader's label for the attack's episode
    episode_id: str = ""
    evidence: str = ""  # the tail of the last observation (or why n/a)


@dataclass
class AuditResult:
    suite: str
    run_id: str
    attacks: list[str]
    harnesses: list[str]
    tasks: list[str]
    cells: list[AuditCell]
    wall_s: float
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def holes(self) -> list[AuditCell]:
        return [c for c in self.cells if c.verdict == "scored"]

    @property
    def passed(self) -> bool:
        return not self.holes

    def matrix(self) -> dict[tuple[str, str], dict[str, int]]:
        """(task_id, attack) -> {verdict: count over harnesses}."""
        out: dict[tuple[str, str], dict[str, int]] = {}
        for c in self.cells:
            counts = out.setdefault((c.task_id, c.attack), dict.fromkeys(VERDICTS, 0))
            counts[c.verdict] += 1
        return out


def _evidence(episode: Any) -> str:
    obs = ""
    for turn in reversed(getattr(episode, "turns", [])):
        obs = getattr(turn, "observation", "") or getattr(turn, "tool_result", "")
        if obs:
            break
    detail = (episode.metadata or {}).get("score", {}) if isinstance(getattr(episode, "metadata", None), dict) else {}
    head = f"[{episode.outcome}] " + (f"{detail.get('detail')} " if isinstance(detail, dict) and detail.get("detail") else "")
    return head + obs[-EVIDENCE_CHARS:]


def audit_plan(suite: str | Any, harnesses: Sequence[str] = ("all",), attacks: Sequence[str] | None = None,
               tasks: Sequence[str] | None = None):
    """(attack names, the evaluation plan) of an audit, or a ConfigError naming what is wrong: a caller checks
    this before it opens (and so creates) a record store."""
    names = list(attacks) if attacks else list(ATTACKS)
    unknown = [a for a in names if a not in ATTACKS]
    if unknown:
        raise ConfigError(f"--attacks: unknown {unknown}; known: {', '.join(ATTACKS)}")
    try:
        plan = plan_eval(suite, harnesses, 1, tasks=tasks)
    except ConfigError as err:
        raise ConfigError(f"audit: {err} (the audit runs on code and terminal suites graded by tests)") from None
    if any(getattr(t, "kind", "") not in ("code", "terminal") for t in plan.tasks):
        raise ConfigError(f"suite {plan.suite_name!r}: audit runs on code and terminal suites (tasks graded by tests)")
    return names, plan


def run_audit(suite: str | Any, store: RecordStore, *, harnesses: Sequence[str] = ("all",), attacks: Sequence[str] | None = None,
              tasks: Sequence[str] | None = None, workers: int = 1, backend: str = "local", run_id: str | None = None,
              on_progress: Callable[[int], None] | None = None, on_attack: Callable[[str, int], None] | None = None) -> AuditResult:
    """Run the attacks; return every (task, harness, attack) cell with its verdict."""
    names, plan = audit_plan(suite, harnesses, attacks, tasks)
    run_id = run_id or f"audit-{plan.suite_name}-{time.strftime('%Y%m%d-%H%M%S')}"
    t0 = time.perf_counter()
    cells: list[AuditCell] = []
    for name in names:
        attack = make_attack(name)
        in_scope, na = [], []
        for t, h in plan.cells:
            reason = attack.not_applicable(t, h)
            (na.append((task_id(t), h.id, reason)) if reason else in_scope.append((t, h)))
        na += plan.out_of_scope
        cells += [AuditCell(t, h, name, "n/a", evidence=r) for t, h, r in na]
        if on_attack is not None:
            on_attack(name, len(in_scope))
        if not in_scope:
            continue
        sub = dataclasses.replace(plan, cells=in_scope, out_of_scope=[])
        result = run_eval(PolicySpec("attack", name), sub, store, backend=backend, workers=workers,
                          run_id=f"{run_id}-{name}", on_progress=on_progress)
        for ep in result.episodes:
            cells.append(AuditCell(ep.context.task_id, ep.context.harness_id, name,
                                   "scored" if ep.success else "blocked", ep.outcome, ep.episode_id, _evidence(ep)))
    order = {a: i for i, a in enumerate(names)}
    cells.sort(key=lambda c: (c.task_id, order[c.attack], c.harness_id))
    # tasks whose grading leaves the agent's code within reach of the verdict (tasks/isolation.py): said
    # beside the holes, so a user knows before training on them even when no scripted attack scored
    isolation = {task_id(t): [iso.level, iso.why] for t in plan.tasks
                 if (iso := grading_isolation(t)).level != "bridged"} if plan.tasks and hasattr(plan.tasks[0], "test_runner") else {}
    return AuditResult(plan.suite_name, run_id, names, [h.id for h in plan.harnesses], [task_id(t) for t in plan.tasks],
                       cells, time.perf_counter() - t0, info={"not_isolated": isolation})


__all__ = ["VERDICTS", "AuditCell", "AuditResult", "run_audit"]
