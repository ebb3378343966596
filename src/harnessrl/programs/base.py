"""One real agent program as data: its pin, its launch, and its tool table.

A program module (`programs/<name>.py`) builds one `Program`:

  * the pin: registry package, version, package manager (`pip` into a venv made from `python`,
    `npm` with the system's Node, or `local`: a file its own package ships, nothing to install),
    the entry point, and the lock shipped with it (the resolved versions a fresh install follows);
  * the launch: `launch(installed, state, *, task, base_url, api_key, model, **options)` writes the
    program's input files into its private state dir (`state`, bound at `STATE` inside the
    sandbox) and returns `(argv, env, outputs)`; `harnessrl.agents.launch` adds what every
    program gets (HOME, XDG dirs, limits, the bind) and `Sandbox.spawn` starts it;
  * the tool table: the program's tools (and what each lets an agent do) and how a scripted
    intent (the oracle's, an attack's) is written as that program's tool call, read by the one
    renderer in `harnessrl.harness._program_render`.

This package is data and argv: from harnessrl it imports only `config` and `plugins` (an
import-linter contract in pyproject.toml), never a runtime's internals (the sandbox, images,
the gateway, the harness). Measurements of what each program sends: docs/real-harnesses.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

STATE = "/agent"  # the program's own writable dir inside the sandbox (HOME, config, outputs)
WORKDIR = "/app"  # the task's workspace inside the sandbox (tasks.workspace.APP; a test checks they agree)
LOCKS = Path(__file__).with_name("locks")  # the built-in programs' locks, one per program


class InstalledLike(Protocol):
    """What a launch reads of an installed program (`harnessrl.agents.install.Installed`)."""

    env: Path  # the venv or the npm prefix
    executable: Path  # the entry point, run by absolute path


Launch = tuple[list[str], dict[str, str], dict[str, str]]  # argv, extra env, outputs (name -> path inside)


# -- the tool table ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Call:
    """One tool call of the program. String arguments are `str.format` templates over an
    intent's values (harness/_program_render.py: path, content, old, new, message, script, ...);
    other values go as they are. `thought` is the text before the call (mini's THOUGHT line)."""

    tool: str
    args: Mapping[str, Any]
    thought: str = ""


@dataclass(frozen=True)
class Say:
    """A plain reply with no tool call (the text is a template): how most programs end."""

    text: str


@dataclass(frozen=True)
class Refuse:
    """The intent cannot be written for this program (a ValueError with this templated message)."""

    message: str


Entry = Call | Say | Refuse


@dataclass(frozen=True)
class ToolTable:
    """How scripted intents become this program's tool calls, one call per reply.

    `intents` maps an intent kind, or `kind:state` with the state of the file the intent names
    (`new`: absent or not readable, `empty`, `existing`), to an entry; `kind:state` wins.
    `wire` is how a call is written: `tool_call` (Hermes `<tool_call>` JSON, which the gateway
    turns into OpenAI tool calls), `mswea` (mini-swe-agent's THOUGHT + one fenced block) or
    `search_replace` (Aider's edit blocks, every edit of a plan in one reply: written by the
    Aider reconstruction's renderer, so `intents` stays empty). Preparatory calls (0 intents
    used) follow the program's own rules: `read_before_edit` (an edit of an existing file the
    program has not read since it last may have changed is preceded by `intents["read"]`),
    `mkdir` (a new file whose folder does not exist gets this call first)."""

    wire: Literal["tool_call", "mswea", "search_replace"]
    tools: Mapping[str, frozenset[str]]  # tool -> what it lets an agent do ("shell", "edit")
    intents: Mapping[str, Entry] = field(default_factory=dict)
    read_before_edit: bool = False
    mkdir: Call | None = None

    @property
    def kinds(self) -> frozenset[str]:
        """The intent kinds this table writes (`answer` is written as `finish` where not named)."""
        kinds = {k.split(":")[0] for k, e in self.intents.items() if not isinstance(e, Refuse)}
        return frozenset(kinds | ({"answer"} if "finish" in kinds else set()))


# -- the program --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Program:
    """One pinned agent program (module docstring)."""

    name: str  # what users type: `--harness mini-swe-agent`, `harnessrl agents install aider-cli`
    package: str  # the registry's package name
    version: str  # pinned; the environment dir is <name>-<version>
    kind: Literal["pip", "npm", "local"]
    entry: str  # executable in <env>/bin (pip), <env>/node_modules/.bin (npm); a file path (local)
    protocol: Literal["text", "tools"]  # how the model acts: fenced text blocks, or OpenAI tool calls
    description: str
    style: str  # the harness style that runs it (a spec's `style`)
    launch: Callable[..., Launch]
    tools: ToolTable
    python: str | None = None  # "3.11": the interpreter its venv is made from (pip programs)
    node: str | None = None  # "20": the Node major version it needs (npm programs)
    # files under the environment that must be executable: an npm tarball may ship a binary
    # without its mode and chmod it at first run, which a read-only mount refuses
    executables: tuple[str, ...] = ()
    lock: Path | None = None  # the resolved versions shipped with it (pip freeze, or npm's package-lock.json)
    specs: tuple[Path, ...] = ()  # harness spec files of a program from outside harnessrl (id = file stem)
    # per-episode launch options from the workspace's files (Aider: the files added to its chat)
    session_options: Callable[[list[str]], dict[str, Any]] | None = None

    @property
    def pin(self) -> str:
        """The registry requirement: `pkg==1.2.3` (pip) or `pkg@1.2.3` (npm)."""
        return f"{self.package}=={self.version}" if self.kind != "npm" else f"{self.package}@{self.version}"

    @property
    def dirname(self) -> str:
        return f"{self.name}-{self.version}"


def builtin_lock(name: str, kind: str) -> Path:
    return LOCKS / (f"{name}.package-lock.json" if kind == "npm" else f"{name}.txt")


# -- helpers the launches share ---------------------------------------------------------------------

def write_input(state: Path, rel: str, text: str) -> str:
    """Write an input file (root-owned, world-readable) into the state dir; its path inside."""
    path = state / rel
    path.write_text(text)
    path.chmod(0o644)
    return f"{STATE}/{rel}"


def give_to_program(state: Path, *paths: Path) -> None:
    """Hand files the program rewrites itself (its own config, its conversations) to the
    workspace's uid, which owns the state dir; nothing to do unless we are root."""
    if os.geteuid() == 0:
        st = state.stat()
        for p in paths:
            os.chown(p, st.st_uid, st.st_gid)


def merged(base: Mapping, over: Mapping) -> dict:
    """`over` merged into `base`, mappings key by key (neither is changed)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merged(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def stdin_argv(task_file: str, executable: str, *args: str) -> list[str]:
    """Run `executable args...` with the task file on stdin, verbatim (a prompt argument may be
    changed by the program: opencode wraps one with a space in quotes)."""
    return ["/bin/sh", "-c", f'exec "$0" "$@" < {task_file}', executable, *args]
