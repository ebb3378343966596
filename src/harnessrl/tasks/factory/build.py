"""Build one task from one or two mutations: the workspace, the hidden tests, the reference edit.

    spec = build_task(bugs, modules, seed)        # None when the mutants do not make a real task

A task is kept only when (checked here, in-process, on the very files written out):
- the buggy workspace fails at least one test case, and no case hangs;
- with two bugs, each bug alone already fails a case (neither is a passenger);
- the reference edit (restoring the original lines) makes every test case pass;
- the edit's steps replay exactly (each `old` occurs once, whole lines).

Knobs, drawn per task from the seed (so the set of tasks is a pure function of the seed):
    context    small (the function and what it calls) | medium (+3 other units) | full (the whole module)
    files      1-3 workspace modules (the others are other corpus modules, cut down, with their tests as regression)
    visibility named | symptom | vague (instruct.py)
    bugs       1 or 2 (two-bug tasks are built from pairs of kept one-bug tasks: pool.py)
"""

from __future__ import annotations

import difflib
import random
from dataclasses import dataclass, replace

from harnessrl.tasks.base import Replace, Solution
from harnessrl.tasks.factory.instruct import Report, write_instruction
from harnessrl.tasks.factory.rules import Mutation, apply_edits
from harnessrl.tasks.factory.sources import Module, module_text, render_tests, select_tests
from harnessrl.tasks.factory.verify import Failure, run_tests

CONTEXT = ("small", "medium", "full")
RULE_SHORT = {"operator_swap": "op", "boundary": "bound", "negated_condition": "neg", "changed_return": "ret",
              "dropped_case": "drop", "swapped_arguments": "swap", "renamed_symbol": "name",
              "docstring_to_implement": "impl"}


@dataclass(frozen=True)
class Knobs:
    context: str
    files: int
    visibility: str
    bugs: int

    def difficulty(self) -> str:
        score = CONTEXT.index(self.context) + (self.files - 1) + ("named", "symptom", "vague").index(self.visibility) \
            + 2 * (self.bugs - 1)
        return "easy" if score <= 1 else "medium" if score <= 3 else "hard"


@dataclass(frozen=True)
class Bug:
    module: Module
    mutation: Mutation


@dataclass(frozen=True)
class TaskSpec:
    name: str
    bugs: tuple[Bug, ...]
    knobs: Knobs
    workspace: dict[str, str]  # buggy files
    tests: dict[str, str]  # "requirement/test_req_x.py" -> text
    steps: tuple[Replace, ...]
    failing: frozenset[str]  # failing cases, "module::test_file::test[i]"
    instruction: str
    reports: tuple[Report, ...]

    @property
    def origins(self) -> tuple[tuple[str, str], ...]:
        return tuple((b.module.origin, b.mutation.function) for b in self.bugs)


# Weighted towards the easy end: the suites are for small models, for which a named test in a short
# module is already at the frontier; the hard end stays in (about a fifth of the draws).
CONTEXT_WEIGHTS = (5, 3, 2)
FILES_WEIGHTS = (6, 3, 1)  # 1, 2, 3 files
VISIBILITY_WEIGHTS = (4, 4, 2)  # named, symptom, vague


def draw_knobs(rng: random.Random, bugs: int) -> Knobs:
    return Knobs(rng.choices(CONTEXT, CONTEXT_WEIGHTS)[0], rng.choices((1, 2, 3), FILES_WEIGHTS)[0],
                 rng.choices(("named", "symptom", "vague"), VISIBILITY_WEIGHTS)[0], bugs)


def task_name(bugs) -> str:
    parts = []
    for b in bugs:
        mu = b.mutation
        parts.append(f"{b.module.name}-{mu.function.replace('.', '-')}-{RULE_SHORT[mu.rule]}-l{mu.line}c{mu.col}")
    return "--".join(parts).replace("_", "-").lower()


def reference_steps(path: str, buggy: str, fixed: str) -> list[Replace]:
    """Replacements turning `buggy` into `fixed`: one per changed hunk, each grown by whole context lines
    until its `old` occurs exactly once in the file (line-based editors need whole, unique lines)."""
    a, b = buggy.splitlines(keepends=True), fixed.splitlines(keepends=True)
    steps = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        for grow in range(0, 8):
            lo, hi = max(0, i1 - grow), min(len(a), i2 + grow)
            old = "".join(a[lo:hi])
            if old.strip() and buggy.count(old) == 1:
                new = "".join(a[lo:i1]) + "".join(b[j1:j2]) + "".join(a[i2:hi])
                steps.append(Replace(path, old, new))
                break
        else:
            return []
    return steps


def _group_files(mod: Module, failing_fns: list[str], passing_fns: list[str], named: bool) -> dict[str, str]:
    out = {}
    req, held = (failing_fns[:1], failing_fns[1:]) if named else (failing_fns, [])
    for group, prefix, names in (("requirement", "req", req), ("heldout", "held", held), ("regression", "reg", passing_fns)):
        if names:
            out[f"{group}/test_{prefix}_{mod.name}.py"] = render_tests(mod, names)
    return out


def _fns(failures: list[Failure], fname: str) -> list[str]:
    """Test functions with a failing case in test file `fname`, in first-failure order."""
    out = []
    for f in failures:
        file, _, rest = f.case.partition("::")
        name = rest.split("[")[0]
        if file == fname and name and name not in out:
            out.append(name)
    return out


def build_task(bugs: tuple[Bug, ...], modules: list[Module], seed: int) -> TaskSpec | None:
    """The task for these bugs (one or two, in different functions), or None if it is not a real task."""
    rng = random.Random(f"{seed}:{task_name(bugs)}")
    knobs = draw_knobs(rng, len(bugs))
    mods = []  # the modules with bugs, in order
    for b in bugs:
        if b.module not in mods:
            mods.append(b.module)
    others = [m for m in modules if m not in mods]
    mods_all = mods + rng.sample(others, max(0, min(len(others), knobs.files - len(mods))))
    knobs = replace(knobs, files=len(mods_all))  # what the workspace really has (a small corpus, two buggy modules)
    files, fixed, tests_by_mod, shifts = {}, {}, {}, {}
    for mod in mods_all:
        own = [b for b in bugs if b.module is mod]
        units = sorted(mod.closure({b.mutation.unit for b in own})) if own else []
        rest = sorted(u.name for u in mod.units if u.name not in units)
        if knobs.context == "full" and own:
            extra = rest
        else:
            extra = rng.sample(rest, min(len(rest), 3 if (knobs.context == "medium" or not own) else 0))
        keep = mod.closure(units + extra)
        text, where = module_text(mod, keep)
        buggy = text
        for b in sorted(own, key=lambda b: -b.mutation.line):  # bottom first: an edit never moves the next one's lines
            shifts[id(b)] = where[mod.unit(b.mutation.unit).start] - mod.unit(b.mutation.unit).start
            buggy = apply_edits(buggy, b.mutation.edits, shifts[id(b)])
        try:
            compile(buggy, mod.name, "exec")
        except SyntaxError:
            return None
        files[f"{mod.name}.py"], fixed[mod.name] = buggy, text
        tests_by_mod[mod] = [t.name for t in select_tests(mod, keep)]
    buggy_mods = {f.removesuffix(".py"): t for f, t in files.items()}
    combined = {f"test_{m.name}.py": render_tests(m, tests_by_mod[m]) for m in mods_all}
    total, failures = run_tests(buggy_mods, combined)
    if not failures or any(f.error == "timeout" or "::" not in f.case for f in failures):
        return None
    if len(bugs) > 1:
        for b in bugs:  # each bug alone fails a case
            alone = dict(fixed)
            alone[b.module.name] = apply_edits(fixed[b.module.name], b.mutation.edits, shifts[id(b)])
            if not run_tests(alone, combined)[1]:
                return None
    tests, reports = {}, []
    for mod in mods_all:
        fname = f"test_{mod.name}.py"
        failing_fns = _fns(failures, fname)
        passing = [t for t in tests_by_mod[mod] if t not in failing_fns]
        tests.update(_group_files(mod, failing_fns, passing, knobs.visibility == "named"))
    if not any(k.startswith("requirement/") for k in tests):
        return None
    for b in bugs:
        # the case a user would report for this bug: from a test of its own function, if one fails
        deps = {t.name: t.deps for t in b.module.tests}
        mine = [f for f in failures if f.case.startswith(f"test_{b.module.name}.py::")]
        own = [f for f in mine if b.mutation.unit in deps.get(f.case.split("::")[1].split("[")[0], ())]
        named = [f for f in own if b.mutation.function.split(".")[-1] in f.case]
        mine = named or own or mine
        first = mine[0] if mine else failures[0]
        reports.append(Report(b.mutation.function, f"{b.module.name}.py", b.mutation.rule,
                              first.case.split("::")[1].split("[")[0], first.symptom, first.error))
    steps = []
    for mod in mods:
        steps += reference_steps(f"{mod.name}.py", files[f"{mod.name}.py"], fixed[mod.name])
    try:
        replayed = Solution(tuple(steps)).final_files(files)
    except ValueError:
        return None
    if not steps or any(replayed.get(f"{m.name}.py", files[f"{m.name}.py"]) != fixed[m.name] for m in mods_all):
        return None
    # the check on the files as written: the grouped test files, buggy (a requirement case fails) and fixed (all pass)
    flat = {path.split("/", 1)[1]: text for path, text in tests.items()}
    _, after_fail = run_tests(buggy_mods, flat)
    if not any(f.case.startswith("test_req_") for f in after_fail):
        return None
    n_fixed, fixed_fail = run_tests(fixed, flat)
    if fixed_fail or n_fixed < total:
        return None
    failing = frozenset(f"{f.case}" for f in failures)
    text = write_instruction(reports, knobs.visibility, len(mods_all) > 1, rng)
    return TaskSpec(task_name(bugs), bugs, knobs, files, tests, tuple(steps), failing, text, tuple(reports))
