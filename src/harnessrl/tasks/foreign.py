"""Terminal-Bench and Harbor task folders as harnessrl Tasks (`load_foreign`; tasks.loaders.load_suite
reaches them too). `suite.rejected` lists [Rejection(path, reason, fix)] for tasks we cannot run.

Foreign tasks run in our sandbox instead of their Docker image, so a task is accepted only
when it needs nothing beyond the host's tools. Its Dockerfile is read, not built
(tasks.foreign_env):

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

import re
import tomllib
from pathlib import Path

import yaml

from harnessrl.tasks.base import Rejection, Solution, Suite, SuiteError, Task, TaskMeta
from harnessrl.tasks.foreign_env import (
    NETWORK,
    Environment,
    Pins,
    Rejected,
    check_compose,
    check_script,
    check_test_installs,
    read_dockerfile,
)


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
    check_compose(folder)
    dockerfile = folder / "Dockerfile"
    env = read_dockerfile(dockerfile, folder, pins) if dockerfile.exists() else Environment(notes=["no Dockerfile"])
    tests = folder / "tests"
    files = _pytest_files(tests) if tests.is_dir() else ()
    if not files:
        raise Rejected("no pytest files (tests/test_*.py) to verify with", "add the task's tests as tests/test_*.py")
    runner = folder / "run-tests.sh"
    if runner.exists():
        check_test_installs(runner.read_text(encoding="utf-8", errors="replace"), "run-tests.sh", pins, env.notes)
        env.notes.append("run-tests.sh replaced by harnessrl's offline pytest run of tests/")
    solution = None
    if (folder / "solution.sh").exists():
        text = (folder / "solution.sh").read_text(encoding="utf-8")
        check_script(text, "solution.sh", pins, env.notes)
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
    check_compose(envdir)
    env = read_dockerfile(envdir / "Dockerfile", envdir, pins) if (envdir / "Dockerfile").exists() else Environment()
    if environment.get("allow_internet"):
        env.notes.append("allow_internet = true in task.toml; the sandbox has no network")
    tests = folder / "tests"
    test_sh = tests / "test.sh"
    if not test_sh.exists():
        raise Rejected("tests/test.sh is missing", "add tests/test.sh (it writes the reward file)")
    files = _pytest_files(tests)
    runner, script = "script", "test.sh"
    script_text = test_sh.read_text(encoding="utf-8", errors="replace")
    if NETWORK.search(script_text) or re.search(r"\b(apt-get|apt|pip3?)\s+install\b", script_text):
        if not files:
            raise Rejected("tests/test.sh downloads tools and there are no pytest files to run offline instead",
                           "make test.sh work offline, or add the checks as tests/test_*.py")
        check_test_installs(script_text, "tests/test.sh", pins, env.notes)
        runner, script = "pytest", None
        env.notes.append("tests/test.sh downloads tools; replaced by harnessrl's offline pytest run of tests/")
    solution = None
    solution_dir = folder / "solution"
    if (solution_dir / "solve.sh").exists():
        check_script((solution_dir / "solve.sh").read_text(encoding="utf-8"), "solution/solve.sh", pins, env.notes)
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
# A folder of them


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
