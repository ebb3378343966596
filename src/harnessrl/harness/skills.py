"""Skills: named, versioned natural-language procedures placed in a harness's prompt.

A skill is a list of *sections*, each with a stable id, a title and a body. It is written
(and rendered into the prompt) as Markdown with the id in brackets in each heading:

    # Skill: fix-bugs
    ## [read-first] Read before you edit
    Open the failing file with `cat` and read the whole function.
    ## [run-tests] Run the tests
    Run `python -m pytest -q` after every edit.

The bracketed id is what the BiPA read rule matches when a turn *references* a section, and
the backticked spans are what it matches when a turn *acts on* one, so both survive
rendering verbatim. `parse_skill(skill.render()) == skill` for every skill.

Versions are content hashes (`name@<12 hex>` of the canonical JSON of name and sections):
two candidates with the same text share a version, so a no-change rewrite is recognisable
in the records. `with_skill(spec, skill)` returns a harness spec whose system prompt
carries the skill (as `$skill`) and whose episodes record `skill_version`.

The mutation operators (`MUTATIONS`) are deterministic given a numpy Generator; a skill
optimizer uses them as proposers, and tests use them as rewrites with known effects
(`noop` changes nothing; `drop_section` removes exactly one section, ...).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from harnessrl.config import ConfigError

SECTION_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,47}$")
_HEADING = re.compile(r"^##\s+\[([^\]]*)\]\s*(.*?)\s*$")
_TITLE = re.compile(r"^#\s+Skill:\s*(\S.*?)\s*$")
CODE_SPAN = re.compile(r"`([^`\n]+)`")


@dataclass(frozen=True, slots=True)
class SkillSection:
    id: str  # stable across rewrites of the body: [a-z0-9][a-z0-9_-]*
    title: str
    text: str

    def code_spans(self) -> list[str]:
        """The backticked spans of the body: commands and code the section tells the agent to use."""
        return [m.group(1).strip() for m in CODE_SPAN.finditer(self.text) if m.group(1).strip()]

    def render(self) -> str:
        return f"## [{self.id}] {self.title}\n{self.text.strip()}\n"


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    sections: tuple[SkillSection, ...]

    def __post_init__(self) -> None:
        if not self.name.strip() or "\n" in self.name:
            raise ConfigError(f"skill name {self.name!r}: give a non-empty single-line name")
        ids = [s.id for s in self.sections]
        for sid in ids:
            if not SECTION_ID.match(sid):
                raise ConfigError(f"skill {self.name!r}: section id {sid!r} must match {SECTION_ID.pattern}")
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ConfigError(f"skill {self.name!r}: section ids {dup} appear more than once; ids must be unique")

    @property
    def version(self) -> str:
        """`name@<12 hex>`: a hash of the content, so identical text means identical version."""
        canon = json.dumps(self.to_json(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return f"{self.name}@{hashlib.sha256(canon.encode()).hexdigest()[:12]}"

    @property
    def section_ids(self) -> list[str]:
        return [s.id for s in self.sections]

    def section(self, sid: str) -> SkillSection:
        for s in self.sections:
            if s.id == sid:
                return s
        raise KeyError(f"skill {self.name!r} has no section {sid!r}; sections: {', '.join(self.section_ids)}")

    def render(self) -> str:
        return f"# Skill: {self.name}\n" + "".join(s.render() for s in self.sections)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "sections": [[s.id, s.title, s.text.strip()] for s in self.sections]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Skill":
        try:
            return cls(str(data["name"]), tuple(SkillSection(str(i), str(t), str(x).strip()) for i, t, x in data["sections"]))
        except (KeyError, TypeError, ValueError) as err:
            raise ConfigError(f"not a skill record ({err}); expected {{'name': ..., 'sections': [[id, title, text], ...]}}") from None

    def with_sections(self, sections: Sequence[SkillSection]) -> "Skill":
        return replace(self, sections=tuple(sections))


def parse_skill(text: str, *, source: str = "skill", name: str | None = None) -> Skill:
    """Markdown (`# Skill: NAME`, then `## [id] Title` sections) -> Skill. Errors name the line."""
    sections: list[SkillSection] = []
    current: list[Any] | None = None
    found_name = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if found_name is None and current is None and (m := _TITLE.match(line)):
            found_name = m.group(1)
            continue
        if line.startswith("## "):
            m = _HEADING.match(line)
            if not m:
                raise ConfigError(f"{source}:{lineno}: section heading {line!r} needs an id: write `## [my-id] Title`")
            if current is not None:
                sections.append(SkillSection(current[0], current[1], "\n".join(current[2]).strip()))
            current = [m.group(1).strip(), m.group(2), []]
            continue
        if current is None:
            if line.strip():
                raise ConfigError(f"{source}:{lineno}: text before the first `## [id] Title` section; put it in a section")
            continue
        current[2].append(line)
    if current is not None:
        sections.append(SkillSection(current[0], current[1], "\n".join(current[2]).strip()))
    if not sections:
        raise ConfigError(f"{source}: no sections found; a skill is `# Skill: NAME` followed by `## [id] Title` sections")
    return Skill(name or found_name or "skill", tuple(sections))


def load_skill(path: str | Path) -> Skill:
    """A skill file: Markdown as in `parse_skill`, or JSON as written by `Skill.to_json`."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"skill file {str(path)!r} does not exist")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        try:
            return Skill.from_json(json.loads(text))
        except json.JSONDecodeError as err:
            raise ConfigError(f"{path}: not JSON ({err})") from None
    return parse_skill(text, source=str(path), name=None)


def skill_in_prompt(text: str) -> list[str]:
    """Section ids whose heading appears in a prompt (what a policy reading its prompt can see)."""
    return [m.group(1) for m in re.finditer(r"^##\s+\[([a-z0-9][a-z0-9_-]*)\]", text, re.MULTILINE)]


# ---------------------------------------------------------------------------------------
# Putting a skill into a harness


def with_skill(spec: Any, skill: Skill | None) -> Any:
    """A copy of a HarnessSpec that injects `skill` into its system prompt and records its version.

    Styles fill `$skill` in the system prompt; a spec whose template lacks the placeholder gets
    it appended, so every harness carries the skill (a skill that silently vanished from the
    prompt would make every optimizer gain selection noise).
    """
    if skill is None:
        return spec.model_copy(update={"skill": None, "skill_version": ""})
    prompt = spec.system_prompt
    if "$skill" not in prompt and "${skill}" not in prompt:
        prompt = (prompt.rstrip() + "\n\n$skill") if prompt.strip() else "$skill"
    return spec.model_copy(update={"system_prompt": prompt, "skill": skill.render(), "skill_version": skill.version})


# ---------------------------------------------------------------------------------------
# Deterministic mutation operators: (skill, rng, pool) -> (new skill, description)

Mutation = Callable[[Skill, np.random.Generator, Sequence[SkillSection]], tuple[Skill, str]]

#: Generic advice an `add_section` draws from when no pool is given. Ids are distinct from any
#: likely seed section so an added section is always a new node in the BiPA graph.
DEFAULT_POOL: tuple[SkillSection, ...] = (
    SkillSection("restate-goal", "Restate the goal", "Before acting, restate in one sentence what a correct result looks like."),
    SkillSection("small-steps", "Work in small steps", "Change one thing at a time and check it before the next change."),
    SkillSection("check-paths", "Check paths", "Use absolute paths under the working directory; list a folder with `ls -la` before writing into it."),
    SkillSection("stop-when-done", "Stop when done", "When the checks pass, stop; do not keep editing working code."),
)

#: Word swaps `rephrase` applies outside code spans (both directions), chosen to keep meaning.
_SYNONYMS = {
    "before": "prior to", "after": "once you have finished", "run": "execute", "check": "verify",
    "read": "look through", "change": "modify", "use": "make use of", "stop": "halt", "make sure": "ensure",
    "first": "to begin with", "every": "each", "file": "source file", "always": "in every case",
}


def noop(skill: Skill, rng: np.random.Generator, pool: Sequence[SkillSection] = ()) -> tuple[Skill, str]:
    """An identical copy: the control candidate whose acceptance rate is pure selection."""
    return skill.with_sections(skill.sections), "noop"


def drop_section(skill: Skill, rng: np.random.Generator, pool: Sequence[SkillSection] = ()) -> tuple[Skill, str]:
    if len(skill.sections) <= 1:
        return noop(skill, rng)[0], "drop_section(none: only one section)"
    k = int(rng.integers(len(skill.sections)))
    return skill.with_sections(skill.sections[:k] + skill.sections[k + 1:]), f"drop_section({skill.sections[k].id})"


def duplicate_section(skill: Skill, rng: np.random.Generator, pool: Sequence[SkillSection] = ()) -> tuple[Skill, str]:
    k = int(rng.integers(len(skill.sections)))
    src = skill.sections[k]
    ids, n = set(skill.section_ids), 2
    while f"{src.id}-{n}"[:48] in ids:
        n += 1
    copy = SkillSection(f"{src.id}-{n}"[:48], src.title, src.text)
    return skill.with_sections(skill.sections[: k + 1] + (copy,) + skill.sections[k + 1:]), f"duplicate_section({src.id})"


def reorder_sections(skill: Skill, rng: np.random.Generator, pool: Sequence[SkillSection] = ()) -> tuple[Skill, str]:
    n = len(skill.sections)
    if n <= 1:
        return noop(skill, rng)[0], "reorder_sections(none: only one section)"
    order = np.arange(n)
    while np.array_equal(order, np.arange(n)):
        order = rng.permutation(n)
    new = tuple(skill.sections[i] for i in order)
    return skill.with_sections(new), "reorder_sections(" + ",".join(s.id for s in new) + ")"


def add_section(skill: Skill, rng: np.random.Generator, pool: Sequence[SkillSection] = ()) -> tuple[Skill, str]:
    pool = tuple(pool) or DEFAULT_POOL
    fresh = [s for s in pool if s.id not in set(skill.section_ids)]
    if not fresh:
        return noop(skill, rng)[0], "add_section(none: pool exhausted)"
    new = fresh[int(rng.integers(len(fresh)))]
    at = int(rng.integers(len(skill.sections) + 1))
    return skill.with_sections(skill.sections[:at] + (new,) + skill.sections[at:]), f"add_section({new.id})"


def _rephrase_prose(text: str) -> str:
    """Swap words by `_SYNONYMS` outside code spans; code and commands are kept byte for byte."""
    table = {**_SYNONYMS, **{v: k for k, v in _SYNONYMS.items()}}
    words = sorted(table, key=len, reverse=True)
    pattern = re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + r")\b", re.IGNORECASE)

    def swap(m: re.Match[str]) -> str:
        out = table[m.group(0).lower()]
        return out[0].upper() + out[1:] if m.group(0)[0].isupper() else out

    parts = re.split(r"(`[^`\n]+`)", text)
    return "".join(p if p.startswith("`") else pattern.sub(swap, p) for p in parts)


def rephrase(skill: Skill, rng: np.random.Generator, pool: Sequence[SkillSection] = ()) -> tuple[Skill, str]:
    """Reword one section's prose (same id, same code spans), so its version changes but not its advice."""
    k = int(rng.integers(len(skill.sections)))
    sec = skill.sections[k]
    text = _rephrase_prose(sec.text)
    if text == sec.text:  # nothing to swap: an explicit paraphrase marker still changes the text
        text = "In other words: " + sec.text
    new = replace(sec, text=text)
    return skill.with_sections(skill.sections[:k] + (new,) + skill.sections[k + 1:]), f"rephrase({sec.id})"


MUTATIONS: dict[str, Mutation] = {
    "noop": noop,
    "drop_section": drop_section,
    "duplicate_section": duplicate_section,
    "reorder_sections": reorder_sections,
    "add_section": add_section,
    "rephrase": rephrase,
}


def mutate(skill: Skill, operator: str, rng: np.random.Generator, pool: Sequence[SkillSection] = ()) -> tuple[Skill, str]:
    if operator not in MUTATIONS:
        raise ConfigError(f"unknown mutation operator {operator!r}; allowed: {', '.join(MUTATIONS)}")
    return MUTATIONS[operator](skill, rng, pool)
