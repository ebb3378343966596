"""Every built-in task is real: the untouched workspace fails a requirement test (and passes
its regression tests), and the reference solution, applied in the sandbox, passes everything."""

from __future__ import annotations

import pytest

from harnessrl.tasks.base import BUILTIN_DIR, Replace, builtin_suites, load_suite_folder
from harnessrl.tasks.runtime import TaskRuntime

SUITES = {name: load_suite_folder(BUILTIN_DIR / name) for name in builtin_suites()}
TASKS = [t for s in SUITES.values() for t in s]


def test_suite_sizes_and_ids():
    assert set(SUITES) >= {"code-v1", "code-v2", "terminal-v1"}
    assert len(SUITES["code-v1"]) >= 40 and len(SUITES["terminal-v1"]) >= 20 and len(SUITES["code-v2"]) >= 30
    ids = [t.id for t in TASKS]
    assert len(ids) == len(set(ids))
    categories = {t.meta.category for t in SUITES["code-v1"]}
    assert {"bugfix", "feature", "refactor"} <= categories
    assert {"text", "files", "git", "scripting", "build"} <= {t.meta.category for t in SUITES["terminal-v1"]}
    assert {"bugfix", "feature"} <= {t.meta.category for t in SUITES["code-v2"]}


def test_code_v2_tasks_are_small_distinct_edits_with_held_out_tests():
    """code-v2 is the first rung for small models: one short edit of one file per task (a reference
    solution of one replacement of at most 6 lines), each task its own module and its own held-out tests."""
    tasks = SUITES["code-v2"]
    modules = set()
    for t in tasks:
        files = [p for p in t.workspace_dir.rglob("*") if p.is_file()]
        assert len(files) == 1, t.id
        modules.add(files[0].name)
        (step,) = t.solution.steps
        assert isinstance(step, Replace) and len(step.new.splitlines()) <= 6, t.id
        assert t.test_files["heldout"], f"{t.id}: held-out tests catch a fix that only passes the visible tests"
    assert len(modules) == len(tasks), "each task is its own module, not a clone of another"


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_task_folder_is_well_formed(task):
    assert task.solution is not None and task.test_files["requirement"]
    assert task.meta.title and task.instruction.strip()
    if task.kind == "code":
        assert task.test_files["regression"], "code tasks separate requirement from regression tests"
        assert task.solution.steps and task.solution.script is None
        assert not task.needs_shell
        originals = {p.relative_to(task.workspace_dir).as_posix(): p.read_text()
                     for p in task.workspace_dir.rglob("*") if p.is_file()}
        files = task.solution.final_files(originals)  # every replacement matches exactly once
        assert files
        for step in task.solution.steps:
            if isinstance(step, Replace):  # whole lines, so line-based editors can replay it
                text = originals.get(step.path, "")
                at = text.find(step.old)
                assert at == 0 or text[at - 1] == "\n", step.path
                assert step.old.endswith("\n") and step.new.endswith("\n"), step.path
    else:
        assert task.solution.script and task.needs_shell
    names = [p.name for p in task.workspace_dir.rglob("*")] if task.workspace_dir else []
    hidden = {f.split("/")[-1] for fs in task.test_files.values() for f in fs}
    assert not hidden & set(names), "hidden test files must not be in the workspace"
    assert task.fingerprint() == task.fingerprint() and len(task.fingerprint()) == 64


@pytest.mark.sandbox
@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_untouched_fails_a_requirement_and_the_solution_solves(task, sandbox):
    with TaskRuntime(task, sandbox) as rt:
        before = rt.score()
    req_passed, req_total = before.counts("requirement")
    assert req_passed < req_total, f"the task is already solved: {before.summary()}"
    assert before.outcome == "dropped_requirement", before.summary() + "\n" + before.run.stdout[-3000:]
    with TaskRuntime(task, sandbox) as rt:
        result = rt.apply_solution()
        if result is not None:
            assert result.ok, f"solve.sh {result.status} {result.exit_code}: {result.output[-2000:]}"
        after = rt.score()
    assert after.outcome == "solved", after.summary() + "\n" + after.run.stdout[-3000:]
    assert after.counts("requirement")[0] == after.counts("requirement")[1] > 0
