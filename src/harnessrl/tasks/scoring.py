"""Run a task's hidden tests against a workspace in the sandbox and classify the outcome.

    score = score_workspace(task, workspace, sandbox)
    score.outcome     "solved" | "dropped_requirement" | "broke_existing"
                      | "dropped_requirement+broke_existing" | "test_error"
    score.success     True only for "solved"
    score.tests       per-test results (nodeid, group, outcome) parsed from pytest -rA
    score.reward      1.0 / 0.0 (a Harbor test.sh may write a fractional reward)

The tests are copied into a scoring directory bound read-only at /tests (never into /app);
pytest runs from /app as the agent's uid with `python -P` (so a `pytest.py` the agent left in
/app cannot stand in for pytest) and `pythonpath = /app` in a pytest.ini of ours (so the tests
import the agent's modules). Requirement tests live under requirement/, regression tests under
regression/; tests of foreign formats (Terminal-Bench, Harbor) all count as requirement tests.

Rules: an empty result never counts as solved; a group whose files exist but report no
results counts as failed; anything but PASSED (failed, error, skipped, xfail, xpass) is a
failure. Honest limit: the tests import the agent's code into the pytest process, so code
written to subvert pytest itself could still forge a report — as in every pytest-based grader.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field

from harnessrl.tasks.base import TEST_GROUPS, Task
from harnessrl.tasks.sandbox import Bind, Sandbox, SandboxResult
from harnessrl.tasks.workspace import Workspace

OUTCOMES = ("solved", "dropped_requirement", "broke_existing", "dropped_requirement+broke_existing", "test_error")
TESTS_AT = "/tests"
LOGS_AT = "/logs/verifier"
_SUMMARY = re.compile(r"^=+ short test summary info =+$")
_FINAL = re.compile(r"^=+ .*\b(passed|failed|error|errors|skipped|deselected|xfailed|xpassed|no tests ran)\b.* in [\d.]+s.* =+$")
_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (.+?)(?: - .*)?$")
_SKIP_LOC = re.compile(r"^\[\d+\] ([^:]+)(?::\d+)?:")
_PYTEST_INI = """[pytest]
pythonpath = /app
addopts = -p no:cacheprovider
"""


@dataclass(frozen=True)
class TestResult:
    nodeid: str
    group: str  # "requirement" | "regression"
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
    return "regression" if nodeid.startswith("regression/") else "requirement"


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
        if (expected and not rows_g) or any(t.outcome != "passed" for t in rows_g):
            failed.append(group)
    label = {"requirement": "dropped_requirement", "regression": "broke_existing"}
    return ("+".join(label[g] for g in failed) or "solved"), tests, ""


def _stage_tests(task: Task, workspace: Workspace) -> Bind:
    """Copy the hidden tests into a fresh scoring dir (owned by the agent uid, outside /app)."""
    dest = workspace.private_dir("tests")
    shutil.rmtree(dest)
    shutil.copytree(task.tests_dir, dest, symlinks=False)
    (dest / "pytest.ini").write_text(_PYTEST_INI)
    workspace.private_dir("tests")  # restore owner and mode on the fresh copy's root
    return Bind(dest, TESTS_AT)


def score_workspace(task: Task, workspace: Workspace, sandbox: Sandbox, *, timeout_s: float | None = None) -> Score:
    """Run the task's hidden tests against `workspace` and classify the result."""
    tests = _stage_tests(task, workspace)
    timeout = timeout_s if timeout_s is not None else task.meta.test_timeout_s
    if task.test_runner == "script":
        return _score_script(task, workspace, sandbox, tests, timeout)
    targets = [f"{TESTS_AT}/{f}" for g in TEST_GROUPS for f in task.test_files.get(g, ())]
    cmd = [
        "python", "-P", "-m", "pytest", "-c", f"{TESTS_AT}/pytest.ini", f"--rootdir={TESTS_AT}", "-rA",
        "--color=no", "--tb=short", "--import-mode=importlib", "--continue-on-collection-errors",
        "-o", "console_output_style=classic", *targets,
    ]
    run = sandbox.run(cmd, workspace, timeout_s=timeout, binds=[tests],
                      env={**task.env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    outcome, results, detail = classify(task, parse_pytest_report(run.stdout))
    if outcome == "test_error":
        detail = f"test run {run.status}" + (f" ({run.detail})" if run.detail else "") + f", exit {run.exit_code}"
    return Score(outcome, results, 1.0 if outcome == "solved" else 0.0, run, detail)


def _score_script(task: Task, workspace: Workspace, sandbox: Sandbox, tests: Bind, timeout: float) -> Score:
    """Harbor style: tests/test.sh writes a reward to /logs/verifier/reward.txt (or .json)."""
    logs = workspace.private_dir("verifier-logs")
    for p in logs.iterdir():
        p.unlink()
    run = sandbox.run(["bash", f"{TESTS_AT}/{task.test_script}"], workspace, timeout_s=timeout,
                      binds=[tests, Bind(logs, LOGS_AT, writable=True)],
                      env={**task.env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    reward = _read_reward(logs)
    rows = parse_pytest_report(run.stdout)
    _, results, _ = classify(task, rows) if rows else ("", (), "")
    if reward is None:
        return Score("test_error", results, 0.0, run, f"no reward file (test run {run.status}, exit {run.exit_code})")
    solved = reward >= 1.0 - 1e-9 and all(t.outcome == "passed" for t in results)
    return Score("solved" if solved else "dropped_requirement", results, reward, run, "")


def _read_reward(logs) -> float | None:
    txt, js = logs / "reward.txt", logs / "reward.json"
    try:
        if txt.is_file():
            return float(txt.read_text().strip().split()[0])
        if js.is_file():
            data = json.loads(js.read_text())
            if isinstance(data, dict):
                data = data.get("reward", next((v for v in data.values() if isinstance(v, (int, float))), None))
            return float(data)
    except (ValueError, IndexError, TypeError):
        return None
    return None


__all__ = ["OUTCOMES", "Score", "TestResult", "classify", "parse_pytest_report", "score_workspace"]
