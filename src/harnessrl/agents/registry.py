"""The real agent programs harnessrl can install and run, by name.

Developer note: one `ProgramSpec` per program, pinned to one upstream version. `kind` says
which package manager installs it (`pip` into a venv made from `python`, or `npm` with the
system's Node), `entry` is the executable it puts in its environment's `bin/`. How a program is
started for one episode is launch.py; how it is installed, locked and hashed is install.py.
Adding a program: a spec here, a launch function in launch.py, a lock in locks/ (written by the
first `harnessrl agents install NAME`), and a start-up check in tests/agents/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harnessrl.config import ConfigError


@dataclass(frozen=True)
class ProgramSpec:
    """One pinned agent program."""

    name: str  # what users type: `--harness mini-swe-agent`, `harnessrl agents install aider-cli`
    package: str  # the registry's package name
    version: str  # pinned; the environment dir is <name>-<version>
    kind: Literal["pip", "npm"]
    entry: str  # executable in <env>/bin (pip) or <env>/node_modules/.bin (npm)
    protocol: Literal["text", "tools"]  # how the model acts: fenced text blocks, or OpenAI tool calls
    description: str
    python: str | None = None  # "3.11": the interpreter its venv is made from (pip programs)
    node: str | None = None  # "20": the Node major version it needs (npm programs)
    # files under the environment that must be executable: an npm tarball may ship a binary
    # without its mode and chmod it at first run, which a read-only mount refuses
    executables: tuple[str, ...] = ()

    @property
    def pin(self) -> str:
        """The registry requirement: `pkg==1.2.3` (pip) or `pkg@1.2.3` (npm)."""
        return f"{self.package}=={self.version}" if self.kind == "pip" else f"{self.package}@{self.version}"

    @property
    def dirname(self) -> str:
        return f"{self.name}-{self.version}"


PROGRAMS: dict[str, ProgramSpec] = {
    "mini-swe-agent": ProgramSpec(
        name="mini-swe-agent", package="mini-swe-agent", version="2.4.6", kind="pip", entry="mini",
        protocol="text", python="3.11",
        description="mini-SWE-agent (the SWE-agent team's minimal bash-only agent, not SWE-agent's ACI), "
                    "text protocol: one ```mswea_bash_command block per reply"),
    "aider-cli": ProgramSpec(
        name="aider-cli", package="aider-chat", version="0.86.2", kind="pip", entry="aider",
        protocol="text", python="3.11",
        description="Aider, non-interactive (--message-file), diff edit format (SEARCH/REPLACE blocks), no git"),
    "qwen-code-cli": ProgramSpec(
        name="qwen-code-cli", package="@qwen-code/qwen-code", version="0.24.4", kind="npm", entry="qwen",
        protocol="tools", node="20",
        executables=("node_modules/@qwen-code/qwen-code/vendor/ripgrep/x64-linux/rg",),
        description="Qwen Code, non-interactive (prompt argument, --approval-mode yolo), OpenAI tool calls"),
    "openhands-cli": ProgramSpec(
        name="openhands-cli", package="openhands", version="1.16.0", kind="pip", entry="openhands",
        protocol="tools", python="3.12",
        description="OpenHands CLI, headless (--headless -t TASK), CodeAct agent, OpenAI tool calls"),
    # a self-contained executable (Bun, no Node needed to run it) per platform in an optional
    # dependency; the package's postinstall hard-links the one for this CPU (AVX2 or "baseline")
    # over its placeholder bin/opencode.exe, so two machines' installs may hash differently
    "opencode-cli": ProgramSpec(
        name="opencode-cli", package="opencode-ai", version="1.18.33", kind="npm", entry="opencode",
        protocol="tools", node="20",
        description="opencode, non-interactive (`opencode run`, the task on stdin), an openai-compatible "
                    "provider, OpenAI tool calls"),
    # speaks only the Responses API (`wire_api = "chat"` is refused since its chat support was
    # removed): the gateway serves /v1/responses by translation. Node only launches its native binary
    "codex-cli": ProgramSpec(
        name="codex-cli", package="@openai/codex", version="0.171.0", kind="npm", entry="codex",
        protocol="tools", node="20",
        description="Codex CLI, non-interactive (`codex exec -`, the task on stdin, its own sandbox off), "
                    "Responses API, function calls"),
}


def program(name: str) -> ProgramSpec:
    """The spec of a known program; a one-line ConfigError naming the known ones otherwise."""
    try:
        return PROGRAMS[name]
    except KeyError:
        raise ConfigError(f"agent program {name!r}: not known; known: {', '.join(sorted(PROGRAMS))}") from None


__all__ = ["PROGRAMS", "ProgramSpec", "program"]
