"""Load suites: built-in names, harnessrl folders, and Terminal-Bench / Harbor task folders.

    suite = load_suite("code-v1")                 # a built-in suite
    suite = load_suite("path/to/suite")           # a folder with suite.toml
    suite = load_suite("path/to/tb-tasks")        # a folder of Terminal-Bench or Harbor tasks
    suite.rejected                                # [Rejection(path, reason)] for tasks we cannot run

Foreign tasks run in our sandbox instead of their Docker image, so a task is accepted only
when it needs nothing beyond the host's tools. Its Dockerfile is read, not built:

- `WORKDIR` must be /app; `COPY`/`ADD` of local files into /app become the workspace;
- `RUN apt-get install P` is accepted when P is installed on the host, `RUN pip install P`
  when P is installed in the interpreter the sandbox uses; anything fetching from the
  network (curl, wget, git clone, npm, cargo, ADD <url>, ...) or writing outside /app and
  /tmp is rejected; other `RUN` lines become a setup script run in the sandbox;
- `ENV` becomes the task's environment; `FROM`, `CMD`, `ENTRYPOINT`, `EXPOSE`, `LABEL`,
  `ARG`, `USER` are ignored (noted); more than one container (docker-compose) is rejected.

Tests: Terminal-Bench's run-tests.sh and Harbor's tests/test.sh usually download uv and
pytest; when the tests are pytest files we run them with our offline pytest instead (noted in
`Task.notes`, every test counts as a requirement test). A Harbor test.sh that needs nothing
from the network runs as is in the sandbox and its reward file decides.
"""

from __future__ import annotations

import importlib.metadata
import re
import shlex
import shutil
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harnessrl.config import read_file
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

_NETWORK = re.compile(r"(?<![\w-])(curl|wget|git\s+clone|npm|npx|yarn|cargo|go\s+(?:get|install)|conda|gem\s+install|"
                      r"uvx?|pipx|rustup|snap|add-apt-repository)(?![\w-])")
_CACHE_CLEANUP = re.compile(r"^rm\s+(-\w+\s+)*(/var/lib/apt/lists/?\*?|/var/cache/\S*|/root/\.cache\S*|/tmp/\S*)(\s+|$)")
_OUTSIDE = re.compile(r"(?<![\w.$-])/(etc|usr|var|root|opt|home|srv|lib|lib64|bin|sbin|boot|sys|proc|dev|mnt)(/|\b)")
_HARMLESS_ENV = {"DEBIAN_FRONTEND", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PIP_NO_CACHE_DIR", "TZ", "LANG", "LC_ALL"}
_IGNORED_INSTRUCTIONS = {"FROM", "CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "ARG", "USER", "MAINTAINER", "HEALTHCHECK",
                         "STOPSIGNAL", "SHELL", "VOLUME", "ONBUILD"}


class Rejected(Exception):
    """A foreign task that cannot run without more than the host offers."""


# ---------------------------------------------------------------------------------------
# What the host offers


def _apt_installed(package: str) -> bool:
    if shutil.which(package):
        return True
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "install ok installed" in out.stdout


def _python_installed(spec: str) -> tuple[bool, str]:
    """Is the distribution in `spec` ("numpy==2.0", "pandas>=2") installed? (ok, note)"""
    m = re.match(r"\s*([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*(==\s*([^\s;,]+))?", spec)
    if not m:
        return False, ""
    name, pinned = m.group(1), m.group(3)
    try:
        version = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False, ""
    return True, (f"{name}=={pinned} requested, {version} installed" if pinned and pinned != version else "")


def _split_commands(run: str) -> list[str]:
    """A RUN line's shell commands (split on &&, ||, ; and newlines; good enough to classify)."""
    return [c.strip() for c in re.split(r"&&|\|\||;|\n", run) if c.strip()]


def _check_install(command: str, notes: list[str]) -> bool:
    """True if `command` is a package install we can satisfy (so it is dropped); raises Rejected."""
    try:
        words = shlex.split(command, posix=True)
    except ValueError:
        return False
    if not words:
        return False
    if words[0] in ("apt-get", "apt", "apk", "yum", "dnf"):
        if "install" not in words:
            return True  # update, clean, ...: nothing to do here
        pkgs = [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
        missing = [p for p in pkgs if not _apt_installed(p.split("=")[0])]
        if missing:
            raise Rejected(f"needs system packages not on this host: {', '.join(missing)}")
        return True
    pip_at = None
    for i in range(len(words)):
        if words[i:i + 2] == ["pip", "install"] or words[i:i + 2] == ["pip3", "install"]:
            pip_at = i + 2
        elif words[i:i + 3] in (["-m", "pip", "install"], ["uv", "pip", "install"]):
            pip_at = i + 3
    if pip_at is not None:
        specs = [w for w in words[pip_at:] if not w.startswith("-")]
        if any(w.startswith("-r") or w == "-e" for w in words[pip_at:]):
            raise Rejected(f"installs Python requirements from a file or source tree: {command!r}")
        for spec in specs:
            ok, note = _python_installed(spec)
            if not ok:
                raise Rejected(f"needs Python package {spec!r}, which is not installed")
            if note:
                notes.append(note)
        return True
    return False


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


def read_dockerfile(path: Path, context: Path) -> _Environment:
    """What a Dockerfile asks for, in sandbox terms (raises Rejected with the reason)."""
    env = _Environment()
    workdir = None
    for word, rest in _instructions(path.read_text(encoding="utf-8", errors="replace")):
        if word == "WORKDIR":
            workdir = rest
            if rest.rstrip("/") != "/app":
                raise Rejected(f"WORKDIR {rest} (the agent's workspace must be /app)")
        elif word in ("COPY", "ADD"):
            parts = [p for p in shlex.split(rest) if not p.startswith("--chown") and not p.startswith("--chmod")]
            if any(p.startswith("--from") for p in parts):
                raise Rejected("multi-stage build (COPY --from)")
            *sources, dest = parts
            for src in sources:
                if re.match(r"\w+://", src):
                    raise Rejected(f"ADD from the network: {src}")
                target = dest if dest.startswith("/") else f"{workdir or '/app'}/{dest}"
                if target.rstrip("/") != "/app" and not target.startswith("/app/"):
                    raise Rejected(f"{word} into {dest}, outside /app")
                host = (context / src).resolve()
                if not host.is_relative_to(context.resolve()) or not host.exists():
                    raise Rejected(f"{word} source {src} is not in the task folder")
                rel = target[len("/app"):].strip("/")
                if host.is_file() and (target.endswith("/") or rel == ""):
                    rel = f"{rel}/{host.name}".strip("/")
                env.copies.append((host, rel))
        elif word == "RUN":
            run = rest[1:-1] if rest.startswith("[") else rest
            for command in _split_commands(run):
                if _check_install(command, env.notes) or _CACHE_CLEANUP.match(command):
                    continue  # satisfied by the host already, or only cleans an image cache
                if _NETWORK.search(command):
                    raise Rejected(f"RUN needs the network: {command!r}")
                if _OUTSIDE.search(command):
                    raise Rejected(f"RUN writes outside /app: {command!r}")
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
            raise Rejected(f"unsupported Dockerfile instruction {word}")
    return env


def _check_compose(folder: Path) -> None:
    for name in ("docker-compose.yaml", "docker-compose.yml", "compose.yaml"):
        path = folder / name
        if path.exists():
            data = yaml.safe_load(path.read_text()) or {}
            services = list((data.get("services") or {}).keys())
            if len(services) > 1:
                raise Rejected(f"needs {len(services)} containers ({', '.join(services)})")


def _pytest_files(tests: Path) -> tuple[str, ...]:
    return tuple(sorted(str(p.relative_to(tests)) for p in tests.rglob("test_*.py")))


def _groups(files: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Foreign tests are all requirement tests, except an optional held-out set under tests/heldout/."""
    heldout = tuple(f for f in files if f.startswith("heldout/"))
    return {"requirement": tuple(f for f in files if f not in heldout), "regression": (), "heldout": heldout}


def _difficulty(value) -> str:
    return value if value in ("easy", "medium", "hard") else "medium"


# ---------------------------------------------------------------------------------------
# Terminal-Bench


def load_terminal_bench_task(folder: Path, suite: str) -> Task:
    """One Terminal-Bench task folder (task.yaml, Dockerfile, solution.sh, run-tests.sh, tests/)."""
    meta_path = folder / "task.yaml"
    try:
        data = yaml.safe_load(meta_path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise Rejected(f"task.yaml cannot be parsed: {err}") from None
    instruction = data.get("instruction")
    if not instruction and isinstance(data.get("descriptions"), list) and data["descriptions"]:
        instruction = data["descriptions"][0].get("description")
    if not instruction:
        raise Rejected("task.yaml has no instruction")
    _check_compose(folder)
    dockerfile = folder / "Dockerfile"
    env = read_dockerfile(dockerfile, folder) if dockerfile.exists() else _Environment(notes=["no Dockerfile"])
    tests = folder / "tests"
    files = _pytest_files(tests) if tests.is_dir() else ()
    if not files:
        raise Rejected("no pytest files (tests/test_*.py) to verify with")
    runner = folder / "run-tests.sh"
    if runner.exists():
        for command in _split_commands(runner.read_text()):
            m = re.search(r"\b(?:uv add|pip3? install|uv pip install)\s+(.+)", command)
            if m:
                for spec in m.group(1).split():
                    if not spec.startswith("-") and not _python_installed(spec)[0]:
                        raise Rejected(f"run-tests.sh needs Python package {spec!r}, which is not installed")
        env.notes.append("run-tests.sh replaced by harnessrl's offline pytest run of tests/")
    solution = None
    if (folder / "solution.sh").exists():
        solution = Solution(script=(folder / "solution.sh").read_text(encoding="utf-8"))
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


def load_harbor_task(folder: Path, suite: str) -> Task:
    """One Harbor task folder (task.toml, instruction.md, environment/, tests/test.sh, solution/)."""
    try:
        data = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise Rejected(f"task.toml cannot be parsed: {err}") from None
    instruction_path = folder / "instruction.md"
    if not instruction_path.exists() or not instruction_path.read_text().strip():
        raise Rejected("instruction.md is missing or empty")
    environment = data.get("environment", {}) or {}
    if environment.get("docker_image"):
        raise Rejected(f"runs in a prebuilt image ({environment['docker_image']})")
    if int(environment.get("gpus", 0) or 0) > 0:
        raise Rejected(f"needs {environment['gpus']} GPU(s)")
    envdir = folder / "environment"
    _check_compose(envdir)
    env = read_dockerfile(envdir / "Dockerfile", envdir) if (envdir / "Dockerfile").exists() else _Environment()
    if environment.get("allow_internet"):
        env.notes.append("allow_internet = true in task.toml; the sandbox has no network")
    tests = folder / "tests"
    test_sh = tests / "test.sh"
    if not test_sh.exists():
        raise Rejected("tests/test.sh is missing")
    files = _pytest_files(tests)
    runner, script = "script", "test.sh"
    script_text = test_sh.read_text(encoding="utf-8", errors="replace")
    if _NETWORK.search(script_text) or re.search(r"\b(apt-get|apt|pip3?)\s+install\b", script_text):
        if not files:
            raise Rejected("tests/test.sh downloads tools and there are no pytest files to run offline instead")
        runner, script = "pytest", None
        env.notes.append("tests/test.sh downloads tools; replaced by harnessrl's offline pytest run of tests/")
    solution = None
    solution_dir = folder / "solution"
    if (solution_dir / "solve.sh").exists():
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


def load_foreign(root: str | Path, name: str | None = None, version: str = "1", description: str = "") -> Suite:
    """A folder of Terminal-Bench and/or Harbor task folders (or one task folder) as a Suite."""
    root = Path(root)
    name = name or root.name
    folders = [root] if _kind(root) else sorted(p for p in root.iterdir() if p.is_dir())
    tasks, rejected = [], []
    for folder in folders:
        kind = _kind(folder)
        if kind is None:
            why = "not a Terminal-Bench (task.yaml) or Harbor (task.toml + instruction.md + tests/) task"
            rejected.append(Rejection(folder, why))
            continue
        try:
            load = load_terminal_bench_task if kind == "terminal-bench" else load_harbor_task
            tasks.append(load(folder, name))
        except Rejected as err:
            rejected.append(Rejection(folder, str(err)))
    return Suite(name, version, description, root, tuple(tasks), tuple(rejected))


def load_suite(spec: str | Path) -> Suite:
    """A built-in suite by name, a harnessrl suite folder, or a folder of foreign tasks."""
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
        return load_foreign(root, info.get("name"), str(info.get("version", "1")), info.get("description", ""))
    suite = load_foreign(root)
    if not suite.tasks and not suite.rejected:
        raise SuiteError(f"{root}: no tasks found (expected suite.toml, or task folders with task.yaml / task.toml).")
    return suite
