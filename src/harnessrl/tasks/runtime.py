"""TaskRuntime: one task's live environment for one episode (the API harnesses build on).

    sandbox = Sandbox()
    with TaskRuntime(task, sandbox) as rt:        # fresh workspace copy + setup.sh, in the sandbox
        rt.instruction                            # what to show the agent
        rt.workspace.read_text("calc.py")         # containment-checked file operations
        rt.workspace.str_replace("calc.py", old, new)
        rt.run("python -m pytest -q")             # SandboxResult; every command is sandboxed
        term = rt.terminal()                      # TmuxTerminal living in the sandbox
        score = rt.score()                        # hidden tests -> Score (closes terminals first)

`apply_solution()` replays the task's reference solution (edit steps through the workspace,
then solve.sh through the sandbox): the reference path an oracle policy emulates through each
harness's own syntax.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from harnessrl.tasks.base import Task, WriteFile
from harnessrl.tasks.sandbox import Bind, Sandbox, SandboxResult
from harnessrl.tasks.scoring import Score, score_workspace
from harnessrl.tasks.terminal import TmuxTerminal
from harnessrl.tasks.workspace import Workspace


class TaskSetupError(RuntimeError):
    """setup.sh failed: the task is broken (not the agent's doing)."""


def replay_solution(task: Task, files, run) -> SandboxResult | None:
    """The reference solution: its edit steps through `files` (containment-checked file operations),
    then its solve.sh through `run(script, binds)` (solution/ bound read-only at /solution)."""
    solution = task.solution
    if solution is None:
        raise ValueError(f"{task.id} ships no solution")
    solution.apply_edits(files)
    if solution.script is None:
        return None
    binds = [Bind(solution.support_dir, "/solution")] if solution.support_dir else []
    return run(solution.script, binds)


class TaskRuntime:
    def __init__(self, task: Task, sandbox: Sandbox, *, quota_mb: int = 256, setup_timeout_s: float = 60.0):
        self.task = task
        self.sandbox = sandbox
        # The task's (and its suite's) hidden tests and solutions never show in the sandbox; the
        # suite folder only when hiding it would not also hide the interpreter the sandbox needs.
        sandbox.hide(task.root)
        suite_root = Path(os.path.abspath(task.root.parent))
        if not any(p.is_relative_to(suite_root) for p in sandbox.ro_paths):
            sandbox.hide(suite_root)
        self.workspace = Workspace.create(task.workspace_dir, quota_mb=quota_mb)
        self._terminals: list[TmuxTerminal] = []
        for source, dest in task.extra_files:
            self.workspace.import_path(source, dest)
        if task.setup_script:
            r = sandbox.run(task.setup_script, self.workspace, timeout_s=setup_timeout_s, env=task.env)
            if not r.ok:
                self.workspace.close()
                raise TaskSetupError(f"{task.id}: setup.sh {r.status}, exit {r.exit_code}: {r.output[-2000:]}")

    @property
    def instruction(self) -> str:
        return self.task.instruction

    def run(self, command: str, *, timeout_s: float | None = None, stdin: str | None = None,
            env: Mapping[str, str] | None = None) -> SandboxResult:
        """Run a shell command (bash -c) in a fresh sandbox over this episode's workspace."""
        return self.sandbox.run(command, self.workspace, timeout_s=timeout_s, stdin=stdin, env={**self.task.env, **(env or {})})

    def terminal(self, **kwargs) -> TmuxTerminal:
        """Start a tmux terminal in the sandbox (closed automatically before scoring)."""
        term = TmuxTerminal(self.sandbox, self.workspace, env=self.task.env, **kwargs)
        self._terminals.append(term)
        return term

    def apply_solution(self, timeout_s: float = 120.0) -> SandboxResult | None:
        """Replay the reference solution; returns solve.sh's result when there is one."""
        return replay_solution(self.task, self.workspace, lambda script, binds: self.sandbox.run(
            script, self.workspace, timeout_s=timeout_s, env=self.task.env, binds=binds))

    def score(self) -> Score:
        """Stop everything the agent left running (score_workspace kills the whole episode, not
        only the terminals), then grade a copy of the workspace in the grader's own domain."""
        for term in self._terminals:
            term.close()
        return score_workspace(self.task, self.workspace, self.sandbox)

    def close(self) -> None:
        for term in self._terminals:
            term.close()
        self.workspace.close()

    def __enter__(self) -> TaskRuntime:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _tree(ws: Workspace) -> dict[str, tuple[bytes, int]]:
    """{path: (content, mode)} of every regular file, .git included."""
    out = {}
    for rel in ws.files(skip=()):
        out[rel] = (ws.read_bytes(rel), (ws.root / rel).lstat().st_mode & 0o7777)
    return out


def file_only_solution(task: Task, sandbox: Sandbox) -> tuple[WriteFile, ...] | None:
    """The reference solution's effect as whole-file writes, when that is all it does.

    Runs the solution on a fresh workspace and diffs the files. Returns None when the effect
    is more than new contents of text files (a deletion, a mode change such as `chmod +x`, an
    executable new file, anything under .git, binary content): such tasks need a shell. With
    it, a harness that can only edit files (Aider) can still reach terminal tasks whose result
    is file contents.
    """
    with TaskRuntime(task, sandbox) as rt:
        before = _tree(rt.workspace)
        result = rt.apply_solution()
        if result is not None and not result.ok:
            raise TaskSetupError(f"{task.id}: the reference solution failed: {result.output[-2000:]}")
        after = _tree(rt.workspace)
    if set(before) - set(after):
        return None
    writes = []
    for path in sorted(after):
        content, mode = after[path]
        if path in before and before[path] == after[path]:
            continue
        if path.startswith(".git/") or "/.git/" in path:
            return None
        if (path in before and before[path][1] != mode) or (path not in before and mode & 0o111):
            return None
        try:
            writes.append(WriteFile(path, content.decode("utf-8")))
        except UnicodeDecodeError:
            return None
    return tuple(writes)
