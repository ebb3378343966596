"""The instruction of a generated task: a bug report that describes the symptom, never the fix.

What the report shows is the visibility knob:
    named     the failing test's name and the failing call with what it returned and what was expected
    symptom   the failing call and its result, no test name
    vague     only that a function misbehaves (with more than one file, not even which file)
The rule never shows (no "an operator is wrong"); a removed body is the one bug a report must
name as such ("only the docstring is left"), since its symptom is just `None`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

VISIBILITY = ("named", "symptom", "vague")


@dataclass(frozen=True)
class Report:
    """What the factory saw of one bug: where it is and how its first failing case failed."""

    function: str  # "f" or "Cls.method"
    file: str  # the workspace file, e.g. "textkit.py"
    rule: str
    test: str  # the first failing test function
    symptom: str  # "`f(1)` returns `2`, expected `3`" or ""
    error: str  # "AssertionError", "NameError: ...", ...


_OPEN = ("Bug report: ", "A user reports: ", "")
_ASK = ("Please fix it.", "Fix the bug.", "Find the cause and fix it.")


def _kind(error: str) -> str:
    if error.startswith("DID NOT RAISE"):
        return f"accepts some input it should reject with {error.split()[-1]}"
    return "gives wrong results for some inputs" if error == "AssertionError" else "raises an error for some inputs"


def _sentence(r: Report, visibility: str, many_files: bool) -> str:
    fn = f"`{r.function}`" if visibility != "vague" or not many_files else f"`{r.function.split('.')[-1]}`"
    where = f" in `{r.file}`" if visibility != "vague" or not many_files else ""
    if r.rule == "docstring_to_implement":
        text = f"{fn}{where} has lost its implementation: only its docstring is left. Implement it as the docstring describes."
        if visibility != "vague" and r.symptom:
            text += f" At the moment {r.symptom}."
    elif visibility == "vague":
        text = f"{fn}{where} {_kind(r.error)}."
    elif r.symptom:
        text = f"{r.symptom} ({fn}{where})."
    else:
        kind = f"raises {r.error} in some cases" if not r.error.startswith(("AssertionError", "DID NOT RAISE")) \
            else _kind(r.error)
        text = f"{fn}{where} {kind}."
    if visibility == "named":
        text += f" The failing test is `{r.test}`."
    return text


def write_instruction(reports: list[Report], visibility: str, many_files: bool, rng: random.Random) -> str:
    """The instruction.md text for one task (one or two bugs)."""
    if visibility not in VISIBILITY:
        raise ValueError(f"visibility {visibility!r}: use one of {VISIBILITY}")
    opener, ask = rng.choice(_OPEN), rng.choice(_ASK)
    tail = " Keep every function's name and signature; other behaviour must keep working."
    if len(reports) == 1:
        return f"{opener}{_sentence(reports[0], visibility, many_files)}\n\n{ask}{tail}\n"
    items = "\n".join(f"{i}. {_sentence(r, visibility, many_files)}" for i, r in enumerate(reports, 1))
    return f"{opener}{'t' if opener else 'T'}here are {len(reports)} separate problems:\n\n{items}\n\nFix both.{tail}\n"
