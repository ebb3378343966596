"""Load suites: built-in names, harnessrl folders, and Terminal-Bench / Harbor task folders.

    suite = load_suite("code-v1")                 # a built-in suite
    suite = load_suite("path/to/suite")           # a folder with suite.toml
    suite = load_suite("path/to/tb-tasks")        # a folder of Terminal-Bench or Harbor tasks
    suite.rejected                                # [Rejection(path, reason, fix)] for tasks we cannot run

Foreign tasks run in our sandbox instead of their Docker image, so a task is accepted only
when it needs nothing beyond the host's tools. Its Dockerfile is read, not built:

- `WORKDIR` must be /app; `COPY`/`ADD` of local files into /app (`./` is /app) become the workspace;
- `RUN apt-get install P` is accepted when P is installed on the host (Terminal-Bench's own
  tmux/asciinema and download tools such as curl are not blockers), `RUN pip install P`
  when P is installed in the interpreter the sandbox uses at a version its pin allows
  (tasks.installs: a mismatched pin refuses the task, or with pins="loose" is noted);
  anything fetching from the network (curl, wget, git clone, npm, cargo, ADD <url>, ...) or
  writing outside /app and /tmp is rejected; other `RUN` lines become a setup script run in
  the sandbox;
- the reference solution (solution.sh, solution/solve.sh) must work offline too: the oracle
  runs it in the same sandbox, so one that downloads an installer is rejected;
- `ENV` becomes the task's environment; `FROM`, `CMD`, `ENTRYPOINT`, `EXPOSE`, `LABEL`,
  `ARG`, `USER` are ignored (noted); more than one container (docker-compose) is rejected.

Tests: Terminal-Bench's run-tests.sh and Harbor's tests/test.sh usually download uv and
pytest; when the tests are pytest files we run them with our offline pytest instead (noted in
`Task.notes`, every test counts as a requirement test). A Harbor test.sh that needs nothing
from the network runs as is in the sandbox and its reward file decides.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml

from harnessrl.config import read_file
from harnessrl.tasks import installs
from harnessrl.tasks.base import (
    BUILTIN_DIR,
    Rejection,
    Solution,
    Suite,
    SuiteError,
    Task,
    TaskMeta,
    builtin_suites,
    load_suite_folder,
)

Pins = Literal["exact", "loose"]

_NETWORK = re.compile(r"(?<![\w-])(curl|wget|git\s+clone|npm|npx|yarn|cargo|go\s+(?:get|install)|conda|gem\s+install|"
                      r"uvx?|pipx|rustup|snap|add-apt-repository)(?![\w-])")
_CACHE_CLEANUP = re.compile(r"^rm\s+(-\w+\s+)*(/var/lib/apt/lists/?\*?|/var/cache/\S*|/root/\.cache\S*|/tmp/\S*)(\s+|$)")
_OUTSIDE = re.compile(r"(?<![\w.$-])/(etc|usr|var|root|opt|home|srv|lib|lib64|bin|sbin|boot|sys|proc|dev|mnt)(/|\b)")
_HARMLESS_ENV = {"DEBIAN_FRONTEND", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PIP_NO_CACHE_DIR", "TZ", "LANG", "LC_ALL"}
_IGNORED_INSTRUCTIONS = {"FROM", "CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "ARG", "USER", "MAINTAINER", "HEALTHCHECK",
                         "STOPSIGNAL", "SHELL", "VOLUME", "ONBUILD"}
_OFFLINE_FIX = "vendor what it downloads into the task folder (COPY it in) or drop the task"


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


def _check_script(text: str, name: str, pins: Pins, notes: list[str]) -> None:
    """A script we run (solution.sh, solve.sh) must work offline: no downloads, no unmet installs."""
    for command in installs.shell_commands(text):
        if _check_install(command, notes, pins, where=f"{name} "):
            continue
        if installs.downloads(command):
            raise Rejected(f"{name} needs the network: {command!r}",
                           f"rewrite {name} to work offline, or {_OFFLINE_FIX}")


# ---------------------------------------------------------------------------------------
# Dockerfiles


@dataclass
class _Environment:
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
            raise Rejected(f"ADD from the network: {src}", _OFFLINE_FIX)
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


def read_dockerfile(path: Path, context: Path, pins: Pins = "exact") -> _Environment:
    """What a Dockerfile asks for, in sandbox terms (raises Rejected with the reason)."""
    env = _Environment()
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
                if _NETWORK.search(command):
                    raise Rejected(f"RUN needs the network: {command!r}", _OFFLINE_FIX)
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


def _check_compose(folder: Path) -> None:
    for name in ("docker-compose.yaml", "docker-compose.yml", "compose.yaml"):
        path = folder / name
        if path.exists():
            data = yaml.safe_load(path.read_text()) or {}
            services = list((data.get("services") or {}).keys())
            if len(services) > 1:
                raise Rejected(f"needs {len(services)} containers ({', '.join(services)})",
                               "only single-container tasks run in the sandbox")


def _pytest_files(tests: Path) -> tuple[str, ...]:
    return tuple(sorted(str(p.relative_to(tests)) for p in tests.rglob("test_*.py")))


def _groups(files: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Foreign tests are all requirement tests, except an optional held-out set under tests/heldout/."""
    heldout = tuple(f for f in files if f.startswith("heldout/"))
    return {"requirement": tuple(f for f in files if f not in heldout), "regression": (), "heldout": heldout}


def _difficulty(value) -> str:
    return value if value in ("easy", "medium", "hard") else "medium"


def _check_test_installs(text: str, name: str, pins: Pins, notes: list[str]) -> None:
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
# Terminal-Bench


def load_terminal_bench_task(folder: Path, suite: str, pins: Pins = "exact") -> Task:
    """One Terminal-Bench task folder (task.yaml, Dockerfile, solution.sh, run-tests.sh, tests/)."""
    meta_path = folder / "task.yaml"
    try:
        data = yaml.safe_load(meta_path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise Rejected(f"task.yaml cannot be parsed: {err}", "fix the YAML") from None
    instruction = data.get("instruction")
    if not instruction and isinstance(data.get("descriptions"), list) and data["descriptions"]:
        instruction = data["descriptions"][0].get("description")
    if not instruction:
        raise Rejected("task.yaml has no instruction", "add an instruction: field")
    _check_compose(folder)
    dockerfile = folder / "Dockerfile"
    env = read_dockerfile(dockerfile, folder, pins) if dockerfile.exists() else _Environment(notes=["no Dockerfile"])
    tests = folder / "tests"
    files = _pytest_files(tests) if tests.is_dir() else ()
    if not files:
        raise Rejected("no pytest files (tests/test_*.py) to verify with", "add the task's tests as tests/test_*.py")
    runner = folder / "run-tests.sh"
    if runner.exists():
        _check_test_installs(runner.read_text(encoding="utf-8", errors="replace"), "run-tests.sh", pins, env.notes)
        env.notes.append("run-tests.sh replaced by harnessrl's offline pytest run of tests/")
    solution = None
    if (folder / "solution.sh").exists():
        text = (folder / "solution.sh").read_text(encoding="utf-8")
        _check_script(text, "solution.sh", pins, env.notes)
        solution = Solution(script=text)
    meta = TaskMeta(
        title=folder.name, kind="terminal", category=str(data.get("category", "")),
        difficulty=_difficulty(data.get("difficulty")), tags=[str(t) for t in data.get("tags") or []], needs_shell=True,
        agent_timeout_s=float(data.get("max_agent_timeout_sec", 360)), test_timeout_s=float(data.get("max_test_timeout_sec", 60)),
    )
    return Task(
        id=f"{suite}/{folder.name}", name=folder.name, suite=suite, instruction=str(instruction).strip() + "\n",
        root=folder, workspace_dir=None, tests_dir=tests, test_files=_groups(files),
        solution=solution, setup_script="\n".join(env.setup) or None, meta=meta, source="terminal-bench",
        notes=tuple(env.notes), env=env.env, extra_files=tuple(env.copies),
    )


# ---------------------------------------------------------------------------------------
# Harbor


def load_harbor_task(folder: Path, suite: str, pins: Pins = "exact") -> Task:
    """One Harbor task folder (task.toml, instruction.md, environment/, tests/test.sh, solution/)."""
    try:
        data = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise Rejected(f"task.toml cannot be parsed: {err}", "fix the TOML") from None
    instruction_path = folder / "instruction.md"
    if not instruction_path.exists() or not instruction_path.read_text().strip():
        raise Rejected("instruction.md is missing or empty", "write the task's instruction in instruction.md")
    environment = data.get("environment", {}) or {}
    if environment.get("docker_image"):
        raise Rejected(f"runs in a prebuilt image ({environment['docker_image']})",
                       "give the task an environment/Dockerfile the loader can read")
    if int(environment.get("gpus", 0) or 0) > 0:
        raise Rejected(f"needs {environment['gpus']} GPU(s)", "the sandbox has no GPUs; drop the task")
    envdir = folder / "environment"
    _check_compose(envdir)
    env = read_dockerfile(envdir / "Dockerfile", envdir, pins) if (envdir / "Dockerfile").exists() else _Environment()
    if environment.get("allow_internet"):
        env.notes.append("allow_internet = true in task.toml; the sandbox has no network")
    tests = folder / "tests"
    test_sh = tests / "test.sh"
    if not test_sh.exists():
        raise Rejected("tests/test.sh is missing", "add tests/test.sh (it writes the reward file)")
    files = _pytest_files(tests)
    runner, script = "script", "test.sh"
    script_text = test_sh.read_text(encoding="utf-8", errors="replace")
    if _NETWORK.search(script_text) or re.search(r"\b(apt-get|apt|pip3?)\s+install\b", script_text):
        if not files:
            raise Rejected("tests/test.sh downloads tools and there are no pytest files to run offline instead",
                           "make test.sh work offline, or add the checks as tests/test_*.py")
        _check_test_installs(script_text, "tests/test.sh", pins, env.notes)
        runner, script = "pytest", None
        env.notes.append("tests/test.sh downloads tools; replaced by harnessrl's offline pytest run of tests/")
    solution = None
    solution_dir = folder / "solution"
    if (solution_dir / "solve.sh").exists():
        _check_script((solution_dir / "solve.sh").read_text(encoding="utf-8"), "solution/solve.sh", pins, env.notes)
        others = [p for p in solution_dir.rglob("*") if p.is_file() and p.name != "solve.sh"]
        solution = Solution(script=(solution_dir / "solve.sh").read_text(encoding="utf-8"),
                            support_dir=solution_dir if others else None)
    metadata = data.get("metadata", {}) or {}
    meta = TaskMeta(
        title=str(data.get("task", {}).get("name", folder.name)) if isinstance(data.get("task"), dict) else folder.name,
        kind="terminal", category=str(metadata.get("category", "")), difficulty=_difficulty(metadata.get("difficulty")),
        tags=[str(t) for t in metadata.get("tags", []) or []], needs_shell=True,
        agent_timeout_s=float((data.get("agent") or {}).get("timeout_sec", 600)),
        test_timeout_s=float((data.get("verifier") or {}).get("timeout_sec", 120)),
    )
    return Task(
        id=f"{suite}/{folder.name}", name=folder.name, suite=suite, instruction=instruction_path.read_text().strip() + "\n",
        root=folder, workspace_dir=None, tests_dir=tests, test_files=_groups(files),
        solution=solution, setup_script="\n".join(env.setup) or None, meta=meta, test_runner=runner, test_script=script,
        source="harbor", notes=tuple(env.notes), env=env.env, extra_files=tuple(env.copies),
    )


# ---------------------------------------------------------------------------------------
# Dispatch


def _kind(folder: Path) -> str | None:
    if (folder / "task.yaml").exists():
        return "terminal-bench"
    if (folder / "task.toml").exists() and (folder / "instruction.md").exists() and (folder / "tests").is_dir():
        return "harbor" if not (folder / "tests" / "requirement").is_dir() else "harnessrl"
    return None


def load_foreign(root: str | Path, name: str | None = None, version: str = "1", description: str = "",
                 pins: Pins = "exact") -> Suite:
    """A folder of Terminal-Bench and/or Harbor task folders (or one task folder) as a Suite.

    `pins`: "exact" refuses a task whose pinned Python packages differ from the host's;
    "loose" loads it and notes each mismatch (see tasks.installs)."""
    if pins not in ("exact", "loose"):
        raise SuiteError(f"pins = {pins!r}: use \"exact\" (refuse version mismatches) or \"loose\" (note them)")
    root = Path(root)
    name = name or root.name
    folders = [root] if _kind(root) else sorted(p for p in root.iterdir() if p.is_dir())
    tasks, rejected = [], []
    for folder in folders:
        kind = _kind(folder)
        if kind is None:
            why = "not a Terminal-Bench (task.yaml) or Harbor (task.toml + instruction.md + tests/) task"
            rejected.append(Rejection(folder, why, "remove the folder, or add the task files"))
            continue
        try:
            load = load_terminal_bench_task if kind == "terminal-bench" else load_harbor_task
            tasks.append(load(folder, name, pins))
        except Rejected as err:
            rejected.append(Rejection(folder, str(err), err.fix))
    return Suite(name, version, description, root, tuple(tasks), tuple(rejected))


def load_suite(spec: str | Path, pins: Pins | None = None) -> Suite:
    """A built-in suite by name, a harnessrl suite folder, or a folder of foreign tasks.

    `pins` overrides suite.toml's `pins` for foreign tasks (default "exact")."""
    if isinstance(spec, str) and spec in builtin_suites():
        return load_suite_folder(BUILTIN_DIR / spec)
    root = Path(spec)
    if not root.exists():
        raise SuiteError(f"{spec}: no such suite; built-in suites are {', '.join(builtin_suites())}, "
                         "or give a folder with suite.toml or Terminal-Bench/Harbor task folders.")
    meta = root / "suite.toml"
    if meta.exists():
        info = read_file(meta).get("suite", {})
        if info.get("format", "harnessrl") == "harnessrl":
            return load_suite_folder(root)
        return load_foreign(root, info.get("name"), str(info.get("version", "1")), info.get("description", ""),
                            pins or info.get("pins", "exact"))
    suite = load_foreign(root, pins=pins or "exact")
    if not suite.tasks and not suite.rejected:
        raise SuiteError(f"{root}: no tasks found (expected suite.toml, or task folders with task.yaml / task.toml).")
    return suite
