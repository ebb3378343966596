"""What a foreign task's container asks of the host, read in sandbox terms (nothing is built).

Terminal-Bench and Harbor tasks (tasks.foreign) ship a Dockerfile, a reference solution and a
test script. `read_dockerfile` turns the Dockerfile into the workspace's files, a setup script
and environment variables, and refuses (`Rejected`, with the fix) anything the sandbox cannot
give: network downloads, writes outside /app and /tmp, system or Python packages the host lacks
or has at another pinned version (tasks.installs; pins="loose" notes a version mismatch
instead), more than one container. The solution and test scripts get the same offline check.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml

from harnessrl.tasks import installs

Pins = Literal["exact", "loose"]

NETWORK = re.compile(r"(?<![\w-])(curl|wget|git\s+clone|npm|npx|yarn|cargo|go\s+(?:get|install)|conda|gem\s+install|"
                     r"uvx?|pipx|rustup|snap|add-apt-repository)(?![\w-])")
_CACHE_CLEANUP = re.compile(r"^rm\s+(-\w+\s+)*(/var/lib/apt/lists/?\*?|/var/cache/\S*|/root/\.cache\S*|/tmp/\S*)(\s+|$)")
_OUTSIDE = re.compile(r"(?<![\w.$-])/(etc|usr|var|root|opt|home|srv|lib|lib64|bin|sbin|boot|sys|proc|dev|mnt)(/|\b)")
_HARMLESS_ENV = {"DEBIAN_FRONTEND", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PIP_NO_CACHE_DIR", "TZ", "LANG", "LC_ALL"}
_IGNORED_INSTRUCTIONS = {"FROM", "CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "ARG", "USER", "MAINTAINER", "HEALTHCHECK",
                         "STOPSIGNAL", "SHELL", "VOLUME", "ONBUILD"}
OFFLINE_FIX = "vendor what it downloads into the task folder (COPY it in) or drop the task"


class Rejected(Exception):
    """A foreign task that cannot run without more than the host offers (`fix`: what would make it run)."""

    def __init__(self, reason: str, fix: str = "") -> None:
        super().__init__(reason)
        self.fix = fix


# ---------------------------------------------------------------------------------------
# Install lines


def _check_pins(specs: list[str], where: str, pins: Pins, notes: list[str], test_tools_ok: bool = False) -> None:
    for spec in specs:
        if test_tools_ok and installs.TEST_TOOLS.match(installs.requirement_name(spec)):
            continue  # the test runner's own pytest: harnessrl runs its pytest instead
        problem = installs.check_pin(spec)
        if problem is None:
            continue
        if problem.missing or pins == "exact":
            raise Rejected(f"{where} {problem.message}".strip(), problem.fix)
        notes.append(f"{where} {problem.message} (pins=loose: runs against the host's version)".strip())


def _check_install(command: str, notes: list[str], pins: Pins = "exact", where: str = "") -> bool:
    """True if `command` is a package install the host already satisfies (so it is dropped); raises Rejected."""
    words = installs.command_words(command)
    apt = installs.apt_packages(words)
    if apt is not None:
        blockers, ignored = installs.missing_apt(apt)
        if blockers:
            raise Rejected(f"{where}needs system packages not on this host: {', '.join(blockers)}",
                           f"install them on the host (apt-get install {' '.join(blockers)}) or drop the task")
        notes.extend(f"{where}ignored apt package {i}" for i in ignored)
        return True
    pip = installs.pip_requirements(words)
    if pip is None:
        return False
    specs, sources = pip
    if sources:
        raise Rejected(f"{where}installs Python requirements from a file or source tree ({', '.join(sources)}): {command!r}",
                       "list the packages with their pins on the install line instead")
    _check_pins(specs, where.strip(), pins, notes)
    return True


def check_script(text: str, name: str, pins: Pins, notes: list[str]) -> None:
    """A script we run (solution.sh, solve.sh) must work offline: no downloads, no unmet installs."""
    for command in installs.shell_commands(text):
        if _check_install(command, notes, pins, where=f"{name} "):
            continue
        if installs.downloads(command):
            raise Rejected(f"{name} needs the network: {command!r}",
                           f"rewrite {name} to work offline, or {OFFLINE_FIX}")


def check_test_installs(text: str, name: str, pins: Pins, notes: list[str]) -> None:
    """The packages a test script installs for its tests: pytest itself is replaced by ours (noted);
    any other package the tests import must be here, at the pinned version."""
    for command in installs.shell_commands(text):
        pip = installs.pip_requirements(installs.command_words(command))
        if pip is None:
            continue
        tools = [s for s in pip[0] if installs.TEST_TOOLS.match(installs.requirement_name(s))]
        if tools:
            notes.append(f"{name} installs {' '.join(tools)}; harnessrl's own pytest runs the tests")
        _check_pins(pip[0], name, pins, notes, test_tools_ok=True)


# ---------------------------------------------------------------------------------------
# Dockerfiles


@dataclass
class Environment:
    copies: list[tuple[Path, str]] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _instructions(text: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\s*\n", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _split_commands(run: str) -> list[str]:
    """A RUN line's shell commands (split on &&, ||, ; and newlines; pipes stay whole)."""
    return [c.strip() for c in re.split(r"&&|\|\||;|\n", run) if c.strip()]


def _copy(word: str, rest: str, workdir: str | None, context: Path) -> list[tuple[Path, str]]:
    """COPY/ADD sources -> (host path, path relative to /app); a folder copied onto /app itself
    becomes one entry per child (the workspace has no "copy onto the root" destination)."""
    parts = [p for p in shlex.split(rest) if not p.startswith("--chown") and not p.startswith("--chmod")]
    if any(p.startswith("--from") for p in parts):
        raise Rejected("multi-stage build (COPY --from)", "flatten the build into one stage")
    if rest.lstrip().startswith("["):
        parts = [str(p) for p in json.loads(rest)]
    *sources, dest = parts
    base = workdir or "/app"
    target = posixpath.normpath(dest if dest.startswith("/") else posixpath.join(base, dest))
    if target != "/app" and not target.startswith("/app/"):
        raise Rejected(f"{word} into {dest}, outside /app", "copy task files into /app (the agent's workspace)")
    rel = target[len("/app"):].strip("/")
    into_dir = dest.endswith("/") or dest in (".", "./") or rel == "" or len(sources) > 1
    out = []
    for src in sources:
        if re.match(r"\w+://", src):
            raise Rejected(f"ADD from the network: {src}", OFFLINE_FIX)
        host = (context / src).resolve()
        if not host.is_relative_to(context.resolve()) or not host.exists():
            raise Rejected(f"{word} source {src} is not in the task folder", "add the file to the task folder")
        if host.is_dir() and rel == "":
            out.extend((child, child.name) for child in sorted(host.iterdir()))
        elif host.is_file() and into_dir:
            out.append((host, f"{rel}/{host.name}".strip("/")))
        else:
            out.append((host, rel))
    return out


def read_dockerfile(path: Path, context: Path, pins: Pins = "exact") -> Environment:
    """What a Dockerfile asks for, in sandbox terms (raises Rejected with the reason)."""
    env = Environment()
    workdir = None
    for word, rest in _instructions(path.read_text(encoding="utf-8", errors="replace")):
        if word == "WORKDIR":
            workdir = posixpath.normpath(rest if rest.startswith("/") else posixpath.join(workdir or "/", rest))
            if workdir != "/app":
                raise Rejected(f"WORKDIR {rest} (the agent's workspace must be /app)",
                               "make /app the task's working directory")
        elif word in ("COPY", "ADD"):
            env.copies.extend(_copy(word, rest, workdir, context))
        elif word == "RUN":
            run = rest
            if rest.startswith("["):  # exec form: ["pip", "install", "x"]
                try:
                    run = shlex.join(str(w) for w in json.loads(rest))
                except json.JSONDecodeError:
                    run = rest[1:-1]
            for command in _split_commands(run):
                if _check_install(command, env.notes, pins) or _CACHE_CLEANUP.match(command):
                    continue  # satisfied by the host already, or only cleans an image cache
                if NETWORK.search(command):
                    raise Rejected(f"RUN needs the network: {command!r}", OFFLINE_FIX)
                if _OUTSIDE.search(command):
                    raise Rejected(f"RUN writes outside /app: {command!r}", "write only under /app or /tmp")
                env.setup.append(command)
        elif word == "ENV":
            pairs = re.findall(r"(\w+)=(\"[^\"]*\"|\S+)", rest) or [tuple(rest.split(None, 1))]
            for key, value in pairs:
                if key not in _HARMLESS_ENV:
                    env.env[key] = value.strip('"')
        elif word in _IGNORED_INSTRUCTIONS:
            if word == "FROM":
                env.notes.append(f"base image {rest} replaced by the host's tools")
        else:
            raise Rejected(f"unsupported Dockerfile instruction {word}", "remove it or express it as RUN")
    return env


def check_compose(folder: Path) -> None:
    for name in ("docker-compose.yaml", "docker-compose.yml", "compose.yaml"):
        path = folder / name
        if path.exists():
            data = yaml.safe_load(path.read_text()) or {}
            services = list((data.get("services") or {}).keys())
            if len(services) > 1:
                raise Rejected(f"needs {len(services)} containers ({', '.join(services)})",
                               "only single-container tasks run in the sandbox")
