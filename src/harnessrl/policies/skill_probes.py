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
(the scripted `Oracle`); a failing one finishes at once (submits unchanged code, or answers
"unknown" on the lookup suite). Because u depends only on (task, seed), evaluating two skills
with the same seeds is a paired comparison, and with different seeds an independent one.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from harnessrl.config import ConfigError
from harnessrl.harness.base import Intent
from harnessrl.harness.skills import CODE_SPAN
from harnessrl.policies.base import AgentState, Policy
from harnessrl.policies.scripted import Oracle, channel, render_next


def uniform(salt: str, task_id: str, seed: int) -> float:
    """A deterministic uniform number in [0, 1) for one (task, seed)."""
    h = hashlib.sha256(f"{salt}|{task_id}|{seed}".encode()).digest()
    return int.from_bytes(h[:8], "little") / 2**64


def section_span(system_prompt: str, section: str) -> str | None:
    """The first code span of section `section` as it appears in a prompt; None if it is absent."""
    m = re.search(rf"^##\s+\[{re.escape(section)}\][^\n]*\n(.*?)(?=^#{{1,2}}\s|\Z)", system_prompt, re.MULTILINE | re.DOTALL)
    if not m:
        return None
    span = CODE_SPAN.search(m.group(1))
    return span.group(1).strip() if span else ""


class _Probe(Oracle):
    """Per episode: first the `prefix` intents (acting on a section), then the oracle if the
    episode is to succeed, else give up at once."""

    kinds = ("code", "terminal", "lookup")

    def succeeds(self, state: AgentState) -> bool:
        raise NotImplementedError

    def prefix(self, state: AgentState) -> list[Intent]:
        return []

    def turn_text(self, state: AgentState) -> str:
        kind = getattr(channel(state).task, "kind", "")
        if kind not in self.kinds:
            raise ConfigError(f"probe policies drive {', '.join(self.kinds)} tasks, not {kind!r}")
        if "probe" not in state.cache:
            state.cache["probe"] = {"ok": self.succeeds(state), "prefix": self.prefix(state)}
        probe = state.cache["probe"]
        if probe["prefix"]:
            text, used = render_next(state, probe["prefix"])
            probe["prefix"] = probe["prefix"][used:]
            return text
        if not probe["ok"]:
            give_up = Intent("answer", text="unknown") if kind == "lookup" else Intent("finish", message="giving up")
            return render_next(state, [give_up])[0]
        return super().turn_text(state)


class SkillBlindPolicy(_Probe):
    """Succeeds with probability p(task), decided by (task, seed) alone; never reads the skill."""

    policy_id = "probe-skill-blind"

    def __init__(self, p: float | dict[str, float] = 0.5, salt: str = "bipa"):
        super().__init__()
        self.p, self.salt = p, salt

    def p_of(self, task_id: str) -> float:
        return float(self.p.get(task_id, 0.5)) if isinstance(self.p, dict) else float(self.p)

    def solves(self, task_id: str, seed: int) -> bool:
        return uniform(self.salt, task_id, seed) < self.p_of(task_id)

    def succeeds(self, state: AgentState) -> bool:
        return self.solves(state.task_id, state.seed)

    def spec(self) -> dict[str, Any]:
        """The policy registry's spec (harnessrl.policies.registry.PolicySpec fields) that rebuilds it."""
        return {"name": "probe-skill-blind", "arg": "", "options": {"p": self.p, "salt": self.salt}}


class SectionFollowerPolicy(_Probe):
    """Acts on one skill section when its prompt has it, and is better when it does."""

    policy_id = "probe-section-follower"

    def __init__(self, section: str, p_with: float = 0.8, p_without: float = 0.3, salt: str = "bipa"):
        super().__init__()
        self.section, self.p_with, self.p_without, self.salt = section, p_with, p_without, salt

    def span(self, state: AgentState) -> str | None:
        system = next((m["content"] for m in state.messages if m["role"] == "system"), "")
        return section_span(system, self.section)

    def succeeds(self, state: AgentState) -> bool:
        p = self.p_with if self.span(state) is not None else self.p_without
        return uniform(self.salt, state.task_id, state.seed) < p

    def prefix(self, state: AgentState) -> list[Intent]:
        span = self.span(state)
        return [Intent("run", command=span)] if span and getattr(channel(state).task, "kind", "") != "lookup" else []

    def spec(self) -> dict[str, Any]:
        return {"name": "probe-section-follower", "arg": self.section,
                "options": {"p_with": self.p_with, "p_without": self.p_without, "salt": self.salt}}


def blind_from_spec(arg: str, options: dict[str, Any]) -> Policy:
    """`--policy probe-skill-blind[:P]` (options: p as a number or {task id: p}, salt)."""
    opts = dict(options)
    if arg:
        opts.setdefault("p", float(arg))
    return SkillBlindPolicy(**opts)


def follower_from_spec(arg: str, options: dict[str, Any]) -> Policy:
    """`--policy probe-section-follower:SECTION` (options: p_with, p_without, salt)."""
    opts = dict(options)
    if arg:
        opts.setdefault("section", arg)
    if "section" not in opts:
        raise ConfigError("probe-section-follower needs the section it follows: --policy probe-section-follower:SECTION_ID")
    return SectionFollowerPolicy(**opts)
