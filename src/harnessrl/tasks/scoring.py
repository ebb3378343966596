"""Run a task's hidden tests against a workspace in the sandbox and classify the outcome.

    score = score_workspace(task, workspace, sandbox)
    score.outcome     "solved" | "dropped_requirement" | "broke_existing"
                      | "dropped_requirement+broke_existing" | "failed_heldout" | "test_error"
    score.success     True only for "solved"
    score.tests       per-test results (nodeid, group, outcome) from the grader's report
    score.reward      1.0 / 0.0 (a Harbor test.sh may write a fractional reward)

Grading is its own trust domain (grader.py, docs/security.md): every process of the episode
is killed first; the tests run over a copy of /app owned by a new uid, with the tests and the
runner read-only, /app last on sys.path, and the verdict read from the grader plugin's report
(never from stdout). Requirement tests live under requirement/, regression tests under
regression/, optional held-out tests under heldout/ (same requirement, other inputs: a
solution that passes requirement and regression tests but fails these is `failed_heldout`,
"passes visible tests, fails held-out", the signature of special-casing); tests of foreign formats (Terminal-Bench, Harbor) all count as requirement tests.

Rules: an empty result never counts as solved; a test file (and so a group) that reports no
results counts as failed; anything but PASSED (failed, error, skipped, xfail, xpass) is a
failure; no report, two reports, a malformed or tampered one, or a run that did not end on its
own is `test_error`. `parse_pytest_report` (stdout's `-rA` summary) is kept for display and
for callers that read plain pytest output; no score depends on it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from harnessrl.tasks.base import TEST_GROUPS, Task
from harnessrl.tasks.grader import TESTS_AT, grader_workspace, run_pytest, run_reward_script, stop_agent
from harnessrl.tasks.sandbox import Sandbox, SandboxResult
from harnessrl.tasks.workspace import Workspace

OUTCOMES = ("solved", "dropped_requirement", "broke_existing", "dropped_requirement+broke_existing", "failed_heldout", "test_error",
            "grader_tamper")  # grader_tamper: a task-image episode wrote where the grader runs (tasks/images/grading.py)
_SUMMARY = re.compile(r"^=+ short test summary info =+$")
_FINAL = re.compile(r"^=+ .*\b(passed|failed|error|errors|skipped|deselected|xfailed|xpassed|no tests ran)\b.* in [\d.]+s.* =+$")
_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (.+?)(?: - .*)?$")
_SKIP_LOC = re.compile(r"^\[\d+\] ([^:]+)(?::\d+)?:")


@dataclass(frozen=True)
class TestResult:
    nodeid: str
    group: str  # "requirement" | "regression" | "heldout"
    outcome: str  # "passed" | "failed" | "error" | "skipped" | "xfail" | "xpass"

    __test__ = False  # not a pytest class


@dataclass(frozen=True)
class Score:
    outcome: str
    tests: tuple[TestResult, ...]
    reward: float
    run: SandboxResult = field(repr=False)
    detail: str = ""

    @property
    def success(self) -> bool:
        return self.outcome == "solved"

    @property
    def failure_modes(self) -> tuple[str, ...]:
        return () if self.outcome == "solved" else tuple(self.outcome.split("+"))

    def counts(self, group: str) -> tuple[int, int]:
        """(passed, total) for a test group."""
        rows = [t for t in self.tests if t.group == group]
        return sum(t.outcome == "passed" for t in rows), len(rows)

    def summary(self) -> str:
        parts = [self.outcome]
        for g in TEST_GROUPS:
            p, n = self.counts(g)
            if n:
                parts.append(f"{g} {p}/{n}")
        if self.detail:
            parts.append(self.detail)
        return ", ".join(parts)

    def to_dict(self) -> dict:
        """A JSON-able summary for Episode.metadata (no test output)."""
        return {
            "outcome": self.outcome, "reward": self.reward, "detail": self.detail,
            "tests": [[t.nodeid, t.group, t.outcome] for t in self.tests],
            "test_run_status": self.run.status, "test_run_wall_s": round(self.run.wall_time, 3),
        }


def parse_pytest_report(output: str) -> list[tuple[str, str]]:
    """[(outcome, nodeid)] from the `-rA` short test summary (the last one in the output)."""
    lines = output.splitlines()
    start = max((i for i, ln in enumerate(lines) if _SUMMARY.match(ln.strip())), default=None)
    if start is None:
        return []
    rows = []
    for ln in lines[start + 1:]:
        ln = ln.rstrip()
        if _FINAL.match(ln):
            break
        m = _LINE.match(ln)
        if not m:
            continue
        kind, rest = m.groups()
        if kind == "SKIPPED":
            loc = _SKIP_LOC.match(rest)
            rest = loc.group(1) if loc else rest
        rows.append(({"XFAIL": "xfail", "XPASS": "xpass"}.get(kind, kind.lower()), rest.strip()))
    return rows


def _normalise(nodeid: str) -> str:
    """pytest prints ids relative to the invocation dir (/app): ../tests/x -> x."""
    while nodeid.startswith("../"):
        nodeid = nodeid[3:]
    prefix = TESTS_AT.lstrip("/") + "/"
    return nodeid[len(prefix):] if nodeid.startswith(prefix) else nodeid


def _group_of(nodeid: str) -> str:
    for group in ("regression", "heldout"):
        if nodeid.startswith(group + "/"):
            return group
    return "requirement"


def classify(task: Task, rows: Sequence[tuple[str, str]]) -> tuple[str, tuple[TestResult, ...], str]:
    """Outcome label from parsed rows; a test reported twice keeps its worst result."""
    worst: dict[str, TestResult] = {}
    for outcome, nodeid in rows:
        nodeid = _normalise(nodeid)
        prev = worst.get(nodeid)
        if prev is None or prev.outcome == "passed":
            worst[nodeid] = TestResult(nodeid, _group_of(nodeid), outcome)
    tests = tuple(worst.values())
    if not tests:
        return "test_error", tests, "no test results"
    failed = []
    for group in TEST_GROUPS:
        rows_g = [t for t in tests if t.group == group]
        expected = bool(task.test_files.get(group)) or (group == "requirement")
        if not expected and not rows_g:
            continue
        silent = [f for f in task.test_files.get(group, ()) if not any(t.nodeid.split("::")[0] == f for t in rows_g)]
        if (expected and not rows_g) or silent or any(t.outcome != "passed" for t in rows_g):
            failed.append(group)
    label = {"requirement": "dropped_requirement", "regression": "broke_existing"}
    visible = [g for g in failed if g != "heldout"]
    if visible:  # held-out results only matter once the visible tests pass
        return "+".join(label[g] for g in visible), tests, ""
    return ("failed_heldout" if failed else "solved"), tests, ""


def score_workspace(task: Task, workspace: Workspace, sandbox: Sandbox, *, timeout_s: float | None = None) -> Score:
    """Stop the agent, then grade a copy of its workspace in the grader's own domain (grader.py)."""
    timeout = timeout_s if timeout_s is not None else task.meta.test_timeout_s
    stop_agent(workspace, sandbox)
    with grader_workspace(workspace) as gws:
        if task.test_runner == "script":
            reward, why, run = run_reward_script(task, gws, sandbox, timeout)
            if reward is None:
                return Score("test_error", (), 0.0, run, why)
            solved = reward >= 1.0 - 1e-9
            return Score("solved" if solved else "dropped_requirement", (), reward, run, "")
        report, why, run = run_pytest(task, gws, sandbox, timeout)
    if report is None:
        return Score("test_error", (), 0.0, run, why)
    outcome, results, detail = classify(task, report["results"])
    if outcome == "test_error":
        detail = f"{detail}; test run {run.status}, exit {run.exit_code}"
    return Score(outcome, results, 1.0 if outcome == "solved" else 0.0, run, detail)


__all__ = ["OUTCOMES", "Score", "TestResult", "classify", "parse_pytest_report", "score_workspace"]
