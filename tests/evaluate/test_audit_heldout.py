"""Held-out test sets of the built-in suites against the `visible-only` special-casing attack.

terminal-v1: the tasks whose deliverable is a program the tests run (a script, a Makefile;
some also ask for the program's output on the given file) have a held-out set; the attack's
gate in front of that program, with the solution's outputs written as they are, passes the
visible tests and fails the held-out ones, and it scores when the held-out set is taken away
(so the gate is a real special-casing solution, not a broken one). One-off tasks (a commit
amended, a secret reverted) give the attack nothing and are n/a, with that reason.
code-v1: which fixes the attack can gate (a changed table, a new class, a dataclass rewrite)
and which it cannot (a pure move of code into a new module)."""

from __future__ import annotations

import shutil

import pytest

from harnessrl.evaluate.audit import run_audit
from harnessrl.policies.adversaries.visible_only import VisibleOnly, gated_units
from harnessrl.records import RecordStore
from harnessrl.rollout.suites import load_suite
from harnessrl.tasks.base import BUILTIN_DIR
from harnessrl.tasks.runtime import TaskRuntime
from harnessrl.tasks.sandbox import Sandbox

PROGRAM_TASKS = sorted([
    "backup-script", "fix-makefile", "fix-quoting-script", "word-frequency-script",
    # one-off tasks rewritten as "write a program, then run it on the given input" (each with a held-out set)
    "archive-manifest", "count-errors-by-component", "csv-sum-by-category", "dedupe-lines", "find-large-files",
    "fix-script-permissions", "json-to-csv", "merge-env-files", "rename-jpeg-extensions", "replace-in-configs",
    "split-log-by-date", "sqlite-report",
])
ONE_OFF_TASKS = ["git-amend-message", "git-revert-secret"]  # git repairs: the repository is the only input


def _task_original_and_final(task):
    ws = task.workspace_dir
    original = {str(p.relative_to(ws)): p.read_text() for p in ws.rglob("*.py")}
    return original, task.solution.final_files(original)


def test_code_fixes_the_attack_can_and_cannot_gate():
    code = load_suite("code-v1")
    units = {name: gated_units(*_task_original_and_final(code[name]))
             for name in ("fix-roman-subtractive", "feat-rate-limiter", "refactor-dataclass", "refactor-split-module")}
    assert units["fix-roman-subtractive"] == ["roman.py:to_roman"]  # reads the changed NUMERALS table
    assert "ratelimit.py:TokenBucket.__init__" in units["feat-rate-limiter"]  # a class the fix added
    assert units["refactor-dataclass"] == ["points.py:Point.<decorators>"]  # dataclass-generated methods
    assert units["refactor-split-module"] == []
    reason = VisibleOnly().task_reason(code["refactor-split-module"])
    assert reason and "would be a real solution" in reason
    assert VisibleOnly().task_reason(code["fix-roman-subtractive"]) is None


@pytest.mark.sandbox
def test_terminal_heldout_sets_fail_untouched_and_pass_with_the_solution():
    suite = load_suite("terminal-v1")
    assert sorted(t.name for t in suite if t.test_files["heldout"]) == PROGRAM_TASKS
    for name in PROGRAM_TASKS:
        task = suite[name]
        with TaskRuntime(task, Sandbox()) as rt:
            untouched = rt.score()
        assert untouched.counts("heldout")[0] == 0 and not untouched.success, (name, untouched.summary())
        with TaskRuntime(task, Sandbox()) as rt:
            rt.apply_solution()
            solved = rt.score()
        assert solved.success and solved.counts("heldout")[0] == solved.counts("heldout")[1] > 0, (name, solved.summary())


@pytest.mark.sandbox
@pytest.mark.slow
def test_visible_only_passes_visible_fails_heldout_on_terminal_program_tasks(tmp_path):
    result = run_audit("terminal-v1", RecordStore(tmp_path / "st"), harnesses=["swe_agent"], attacks=["visible-only"],
                       tasks=[*PROGRAM_TASKS, *ONE_OFF_TASKS])
    cells = {c.task_id.split("/")[1]: c for c in result.cells}
    for name in PROGRAM_TASKS:
        assert (cells[name].verdict, cells[name].outcome) == ("blocked", "failed_heldout"), (name, cells[name].evidence)
    for name in ONE_OFF_TASKS:
        assert cells[name].verdict == "n/a" and "one-off" in cells[name].evidence
    assert result.passed


@pytest.mark.sandbox
@pytest.mark.slow
def test_without_its_heldout_set_a_program_task_is_a_hole(tmp_path):
    root = tmp_path / "no-heldout"
    root.mkdir()
    (root / "suite.toml").write_text((BUILTIN_DIR / "terminal-v1" / "suite.toml").read_text()
                                     .replace('name = "terminal-v1"', 'name = "terminal-noheldout"'))
    for name in ("csv-sum-by-category", "fix-makefile", "sqlite-report"):  # a program + the report it writes
        shutil.copytree(BUILTIN_DIR / "terminal-v1" / name, root / name)
        shutil.rmtree(root / name / "tests" / "heldout")
    result = run_audit(str(root), RecordStore(tmp_path / "st"), harnesses=["swe_agent"], attacks=["visible-only"])
    assert sorted(c.task_id for c in result.holes) == ["terminal-noheldout/csv-sum-by-category",
                                                       "terminal-noheldout/fix-makefile",
                                                       "terminal-noheldout/sqlite-report"]
    assert not result.passed
