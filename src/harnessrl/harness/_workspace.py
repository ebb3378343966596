"""The one place the code/terminal styles touch a task's environment (a `TaskRuntime`).

Everything goes through harnessrl.tasks: commands through the bubblewrap sandbox
(`runtime.run`), file tools through the workspace's containment-checked operations, the
verdict through the hidden tests (`runtime.score`). Keeping the calls here means a style
never reaches around the sandbox by accident.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harnessrl.tasks.workspace import WorkspaceError

FileError = WorkspaceError


@dataclass(slots=True)
class ShellOutput:
    stdout: str
    stderr: str
    exit_code: int | None
    status: str  # a sandbox status: ok, timeout, oom, output_truncated, killed, sandbox_error
    signal: int | None = None
    seconds: float = 0.0


@dataclass(slots=True)
class Score:
    solved: bool
    outcome: str
    info: dict[str, Any] = field(default_factory=dict)


def run(env: Any, script: str, *, timeout: float) -> ShellOutput:
    if "\x00" in script:  # an argv cannot carry it; bash would not run it either
        return ShellOutput("", "bash: the command contains a NUL byte and was not run\n", 2, "ok")
    try:
        script.encode("utf-8")
    except UnicodeEncodeError:
        return ShellOutput("", "bash: the command is not valid Unicode text and was not run\n", 2, "ok")
    r = env.run(script, timeout_s=max(0.1, timeout))
    return ShellOutput(r.stdout, r.stderr, r.exit_code, r.status, r.signal, r.wall_time)


def read_text(env: Any, rel: str) -> str:
    try:
        return env.workspace.read_text(rel)
    except WorkspaceError:
        raise
    except (OSError, ValueError) as err:  # e.g. a name too long: the agent's problem, not a crash
        raise FileError(f"/app/{rel}: {getattr(err, 'strerror', None) or err}") from None


def write_text(env: Any, rel: str, text: str) -> None:
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from a JSON string: not text a file can hold
        raise FileError(f"/app/{rel}: the content is not valid Unicode text (lone surrogate); nothing written") from None
    try:
        env.workspace.write_bytes(rel, data)
    except WorkspaceError:
        raise
    except (OSError, ValueError) as err:
        raise FileError(f"/app/{rel}: {getattr(err, 'strerror', None) or err}") from None


def exists(env: Any, rel: str) -> bool:
    try:
        return env.workspace.exists(rel)
    except (WorkspaceError, OSError, ValueError):
        return False


def is_dir(env: Any, rel: str) -> bool:
    try:
        return env.workspace.is_dir(rel)
    except (WorkspaceError, OSError, ValueError):
        return False


def list_files(env: Any) -> list[str]:
    return env.workspace.files()


def python(env: Any) -> str:
    """The interpreter name inside the sandbox (its PATH puts the harnessrl environment first)."""
    return "python"


def terminal(env: Any, **kwargs: Any) -> Any:
    return env.terminal(**kwargs)


def files_block(env: Any, max_chars: int, fence: str = "```") -> str:
    """Every text file of the workspace as `path` + fenced contents (Aider's chat-file layout)."""
    parts, used, left_out = [], 0, []
    for rel in list_files(env):
        try:
            text = read_text(env, rel)
        except FileError:
            continue
        if "\x00" in text or used + len(text) > max_chars:
            left_out.append(rel)
            continue
        f = fence
        while f in text:
            f += "`"
        body = text if text.endswith("\n") or not text else text + "\n"
        parts.append(f"{rel}\n{f}\n{body}{f}")
        used += len(text)
    if left_out:
        parts.append("Files not shown (binary or too large): " + ", ".join(left_out))
    return "\n\n".join(parts) if parts else "(the repository has no files yet)"


def score(env: Any) -> Score:
    s = env.score()
    info = s.to_dict()
    for group in ("requirement", "regression", "heldout"):
        passed, total = s.counts(group)
        info[f"{group}_passed"], info[f"{group}_total"] = passed, total
    info["failure_modes"] = list(s.failure_modes)
    if getattr(env, "metadata", None):  # a task image's runtime: the image and its base substitutions
        info["task_image"] = env.metadata
    return Score(solved=s.success, outcome=s.outcome, info=info)
