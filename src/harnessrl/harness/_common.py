"""What the six code/terminal styles share: paths under /app, the shell with a remembered
working directory, output capping, the scope rule, scripted-plan rendering and the verdict.

The agent sees the task's workspace at `/app` (where the sandbox binds it). Every command
runs in the sandbox (harnessrl.tasks); file tools go through the workspace's safe file
operations, which refuse anything outside the workspace (symlinks included).

Scope rule (which task x harness cells are meaningful): a task *needs* a capability —
`shell` (run commands) when its task.toml says `needs_shell = true`, else `edit` (change
files) — and a harness *has* the capabilities of its tools.
A cell is in scope iff needs <= has. Aider has no shell, so terminal tasks that need one are
out of its scope; a spec that drops a tool drops its capability. Out-of-scope cells are
reported as such by the evaluation, never silently skipped.
"""

from __future__ import annotations

import posixpath
import shlex
from typing import Any, ClassVar

from harnessrl.harness import _workspace as ws
from harnessrl.harness.base import Harness, Intent, TextHarness, Session, Verdict, fill
from harnessrl.tasks.contract import TaskLike

WORKDIR = "/app"
_CWD_MARK = "__harnessrl_cwd__:"


def resolve(path: str, cwd: str = WORKDIR) -> str | None:
    """A path as the agent wrote it -> workspace-relative ('' = /app itself); None if outside /app."""
    if not isinstance(path, str) or not path or "\x00" in path:
        return None
    p = posixpath.normpath(posixpath.join(cwd, path))
    if p == WORKDIR:
        return ""
    if p.startswith(WORKDIR + "/"):
        return p[len(WORKDIR) + 1:]
    return None


def shown(rel: str) -> str:
    """Workspace-relative path -> the absolute path the agent sees."""
    return f"{WORKDIR}/{rel}" if rel else WORKDIR


def absolute(path: str) -> str:
    """A scripted policy's path as a tool that wants absolute paths takes it (absolute ones unchanged)."""
    return path if path.startswith("/") else shown(resolve(path) or "")


def cap_middle(text: str, limit: int, note: str = "[... {n} characters omitted ...]") -> str:
    """Keep the head and tail of long output; say how much was cut from the middle."""
    if len(text) <= limit:
        return text
    marker = "\n" + note.format(n=len(text) - limit) + "\n"
    half = max(0, (limit - len(marker)) // 2)
    return text[:half] + marker + text[len(text) - half:]


def numbered(text: str, start: int = 1, sep: str = "\t", width: int = 6) -> str:
    """`cat -n` style numbering."""
    return "\n".join(f"{i:>{width}}{sep}{line}" for i, line in enumerate(text.split("\n"), start))


# ----------------------------------------------------------------------------------------
# The shell: one sandboxed process per command, working directory carried between them


class Shell:
    """Runs agent commands in the sandbox. Each command is a fresh sandboxed bash; the working
    directory (not exported variables) carries over, as in a persistent session."""

    def __init__(self, env: Any, timeout: float):
        self.env, self.timeout, self.cwd = env, timeout, WORKDIR

    def run(self, command: str, *, timeout: float | None = None, cwd: str | None = None,
            keep_cwd: bool = True) -> ws.ShellOutput:
        start = cwd or self.cwd
        script = (
            f"cd {shlex.quote(start)} 2>/dev/null || cd {WORKDIR}\n"
            f"eval {shlex.quote(command)}\n"
            "__harnessrl_rc=$?\n"
            f"printf '\\n{_CWD_MARK}%s\\n' \"$PWD\"\n"
            "exit $__harnessrl_rc\n"
        )
        out = ws.run(self.env, script, timeout=timeout or self.timeout)
        stdout, new_cwd = _strip_mark(out.stdout)
        if new_cwd is not None and keep_cwd and resolve(new_cwd) is not None:
            self.cwd = new_cwd
        return ws.ShellOutput(stdout=stdout, stderr=out.stderr, exit_code=out.exit_code, status=out.status,
                              signal=out.signal, seconds=out.seconds)


def _strip_mark(stdout: str) -> tuple[str, str | None]:
    at = stdout.rfind("\n" + _CWD_MARK)
    if at < 0:
        return stdout, None
    rest = stdout[at + 1 + len(_CWD_MARK):]
    return stdout[:at], rest.split("\n", 1)[0]


# ----------------------------------------------------------------------------------------
# Capabilities and the scope rule

def task_needs(task: TaskLike) -> set[str]:
    """`shell` for tasks only solvable by running commands (task.toml `needs_shell`), else `edit`."""
    return {"shell"} if getattr(task, "needs_shell", False) else {"edit"}


class CodeTools(Harness):
    """What a style that drives code and terminal tasks in a sandboxed workspace has: tools with
    capabilities, and the scope rule. Our own such styles are `CodeHarness`es; the real programs'
    (harness/program.py) use it without parsing anything."""

    env_kinds: ClassVar[tuple[str, ...]] = ("code", "terminal")
    #: what each tool lets the agent do; a spec without a tool loses its capability
    tool_capabilities: ClassVar[dict[str, frozenset[str]]] = {}

    @property
    def capabilities(self) -> set[str]:  # the tools' capabilities (Harness.capabilities)
        caps: set[str] = set()
        for tool in self.tools:
            caps |= self.tool_capabilities.get(tool, frozenset())
        return caps

    def compatibility(self, task: TaskLike) -> str | None:
        """None when the cell is in scope; otherwise the reason it is not."""
        kind = getattr(task, "kind", None)
        if kind not in self.env_kinds:
            return f"{self.style} drives {', '.join(self.env_kinds)} tasks, not {kind!r}"
        missing = task_needs(task) - self.capabilities
        if missing:
            return f"task needs {', '.join(sorted(missing))}; harness {self.id!r} has only {', '.join(sorted(self.capabilities)) or 'nothing'}"
        return None

    def supports(self, task: TaskLike) -> bool:
        return self.compatibility(task) is None

    # -- scripted plans -------------------------------------------------------------------

    def expressible(self, intent: Intent) -> bool:
        """False when this syntax cannot carry the intent (e.g. content holding a format marker)."""
        return True


class CodeHarness(CodeTools, TextHarness):
    """Base of our own code and terminal styles: they parse the model's replies themselves."""


class CodeSession(Session):
    """Session over a sandboxed workspace: shell, stop reason, verdict from the hidden tests."""

    harness: CodeHarness

    def __init__(self, harness: CodeHarness, task: TaskLike, env: Any, seed: int):
        super().__init__(harness, task, env, seed)
        self.shell = Shell(env, harness.spec.command_timeout_s)
        self.stop_reason = ""

    def stop(self, reason: str, status: str = "ok") -> None:
        self.done, self.stop_reason = True, reason
        if status != "ok":
            self.stop_status = status

    def opt(self, name: str, default: Any) -> Any:
        return self.harness.spec.options.get(name, default)

    def prompt_values(self) -> dict[str, Any]:
        """Values every style can use in its templates."""
        return {
            "instruction": self.task.instruction.strip(),
            "workdir": WORKDIR,
            "skill": self.harness.spec.skill or "",
            "task_id": getattr(self.task, "task_id", getattr(self.task, "id", "")),
            "max_turns": self.harness.spec.max_turns,
        }

    def open_conversation(self, values: dict[str, Any]) -> list[dict[str, str]]:
        """The first two messages: the spec's system prompt and task template filled with `values`."""
        self.messages = [{"role": "system", "content": fill(self.harness.spec.system_prompt, **values)},
                         {"role": "user", "content": fill(self.harness.spec.task_template, **values)}]
        return self.messages

    def finish(self) -> Verdict:
        score = ws.score(self.env)
        info = dict(score.info)
        info["stop_reason"] = self.stop_reason or ("turn_limit" if self.stop_status == "turn_limit" else "")
        return Verdict(reward=1.0 if score.solved else 0.0, success=score.solved, outcome=score.outcome,
                       status="ok", info=info)
