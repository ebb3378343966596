"""Probe policies with known relations to the skill, for auditing skill optimizers (BiPA).

Each probe plays a real harness on a real task. Whether an episode succeeds is decided up
front by a uniform number u = hash(salt, task id, seed) in [0, 1):

    SkillBlindPolicy       succeeds iff u < p(task). It never reads its prompt, so no skill
                           can help or hurt it: every gain an optimizer reports for it is
                           selection, and its exact acceptance rates are binomial in p.
    SectionFollowerPolicy  reads the skill in its system prompt; when section `section` is
                           there it first runs that section's first code span (acts on it),
                           then succeeds iff u < p_with; without the section, iff u < p_without.
                           The BiPA graph must show that one section read and acted on.

A succeeding episode carries out the task's reference plan through the harness's own syntax
(`Harness.render_turn` / `render_intent`); a failing one gives up at once (submits unchanged
code, or answers "unknown"). Because u depends only on (task, seed), evaluating two skills
with the same seeds is a paired comparison, and with different seeds an independent one.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from harnessrl.harness.base import Intent
from harnessrl.harness.skills import CODE_SPAN
from harnessrl.policies.base import Action, AgentState, Policy


def uniform(salt: str, task_id: str, seed: int) -> float:
    """A deterministic uniform number in [0, 1) for one (task, seed)."""
    h = hashlib.sha256(f"{salt}|{task_id}|{seed}".encode()).digest()
    return int.from_bytes(h[:8], "little") / 2**64


def solve_plan(task: Any) -> list[Intent]:
    """The task's reference solution as intents (code/terminal edit steps and script; lookup look + answer)."""
    sol = getattr(task, "solution", None)
    if callable(sol):  # lookup tasks: [("read", obj), ("answer", text)]
        return [Intent("read", path=arg) if kind == "read" else Intent("answer", text=arg) for kind, arg in sol()]
    if sol is None:
        raise ValueError(f"task {getattr(task, 'task_id', task)!r} has no reference solution; probes need one")
    plan: list[Intent] = []
    for step in sol.steps:
        if hasattr(step, "old"):
            plan.append(Intent("replace", path=step.path, old=step.old, new=step.new))
        else:
            plan.append(Intent("write", path=step.path, content=step.content))
    if sol.script:
        plan.append(Intent("run", command=sol.script))
    return plan + [Intent("finish", message="done")]


def give_up_plan(task: Any) -> list[Intent]:
    if getattr(task, "kind", "") == "lookup":
        return [Intent("answer", text="unknown")]
    return [Intent("finish", message="giving up")]


def section_span(system_prompt: str, section: str) -> str | None:
    """The first code span of section `section` as it appears in a prompt; None if it is absent."""
    m = re.search(rf"^##\s+\[{re.escape(section)}\][^\n]*\n(.*?)(?=^#{{1,2}}\s|\Z)", system_prompt, re.MULTILINE | re.DOTALL)
    if not m:
        return None
    span = CODE_SPAN.search(m.group(1))
    return span.group(1).strip() if span else ""


class _PlanPolicy(Policy):
    """Runs a per-episode list of intents through the harness, one rendered turn at a time."""

    def plan(self, state: AgentState) -> list[Intent]:
        raise NotImplementedError

    def act(self, states: list[AgentState]) -> list[Action]:
        out = []
        for s in states:
            if "plan" not in s.cache:
                s.cache["plan"] = self.plan(s)
            plan: list[Intent] = s.cache["plan"]
            if not plan:  # the harness kept the episode open after the plan: stop politely
                plan = give_up_plan(s.task)
            render_turn = getattr(s.harness, "render_turn", None)
            if render_turn is not None:
                text, used = render_turn(plan, s.session)
            else:
                text, used = s.harness.render_intent(plan[0], s.session), 1
            s.cache["plan"] = plan[used:]
            out.append(Action(text))
        return out


class SkillBlindPolicy(_PlanPolicy):
    """Succeeds with probability p(task), decided by (task, seed) alone; never reads the skill."""

    policy_id = "probe-skill-blind"

    def __init__(self, p: float | dict[str, float] = 0.5, salt: str = "bipa"):
        self.p, self.salt = p, salt

    def p_of(self, task_id: str) -> float:
        return float(self.p.get(task_id, 0.5)) if isinstance(self.p, dict) else float(self.p)

    def solves(self, task_id: str, seed: int) -> bool:
        return uniform(self.salt, task_id, seed) < self.p_of(task_id)

    def plan(self, state: AgentState) -> list[Intent]:
        return solve_plan(state.task) if self.solves(state.task_id, state.seed) else give_up_plan(state.task)

    def spec(self) -> dict[str, Any]:
        return {"kind": "skill_blind", "p": self.p, "salt": self.salt}


class SectionFollowerPolicy(_PlanPolicy):
    """Acts on one skill section when its prompt has it, and is better when it does."""

    policy_id = "probe-section-follower"

    def __init__(self, section: str, p_with: float = 0.8, p_without: float = 0.3, salt: str = "bipa"):
        self.section, self.p_with, self.p_without, self.salt = section, p_with, p_without, salt

    def plan(self, state: AgentState) -> list[Intent]:
        system = next((m["content"] for m in state.messages if m["role"] == "system"), "")
        span = section_span(system, self.section)
        p = self.p_with if span is not None else self.p_without
        plan = solve_plan(state.task) if uniform(self.salt, state.task_id, state.seed) < p else give_up_plan(state.task)
        return ([Intent("run", command=span)] if span else []) + plan

    def spec(self) -> dict[str, Any]:
        return {"kind": "section_follower", "section": self.section, "p_with": self.p_with, "p_without": self.p_without, "salt": self.salt}


PROBES = {"skill_blind": SkillBlindPolicy, "section_follower": SectionFollowerPolicy}


def make_probe(spec: dict[str, Any]) -> Policy:
    """Rebuild a probe from its `spec()` (as written in an optimizer log)."""
    kind = spec.get("kind")
    if kind not in PROBES:
        raise ValueError(f"unknown probe policy {kind!r}; known: {', '.join(PROBES)}")
    return PROBES[kind](**{k: v for k, v in spec.items() if k != "kind"})
