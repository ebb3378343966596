"""Task and Suite: problems with hidden verifiers, and the folder format that holds them.

A suite is a folder::

    suite.toml                     [suite] name, version, description; [defaults] task.toml keys
    <task-name>/
        task.toml                  metadata (below); unknown keys are errors
        instruction.md             what the agent is told
        workspace/                 the files the agent starts with (copied to /app); optional
        setup.sh                   optional: runs in the sandbox (cwd /app, the agent's uid) on the
                                   fresh workspace before the agent starts, e.g. to build git history
        tests/requirement/*.py     HIDDEN pytest files checking the new behaviour
        tests/regression/*.py      HIDDEN pytest files checking behaviour that must keep working
        tests/heldout/*.py         optional HIDDEN held-out tests: the same requirement on other inputs,
                                   never shown or hinted at in the text; a task passes only if they pass
                                   too (against solutions that special-case the visible tests)
        tests/...                  HIDDEN helpers and data (the tests see them under /tests)
        solution/edits.toml        exact replacements and whole files (below)
        solution/solve.sh          a shell script run in /app

task.toml keys (each may also be given once for all tasks in suite.toml's [defaults]):
    title, kind ("code" | "terminal"), category, difficulty, tags, needs_shell,
    agent_timeout_s, test_timeout_s, and the task's reward hook (harnessrl.rewards):
    reward_funcs, reward_weights, verifier_weight; a generated task's [factory] table (its origin, rule
    and knobs: tasks/factory/, docs/task-factory.md)

solution/edits.toml is an ordered list of steps the oracle can replay through any harness's
own edit syntax (SEARCH/REPLACE, str_replace_editor, `edit start:end`, a heredoc...)::

    [[step]]                        # an exact replacement; `old` occurs once when applied
    path = "stats.py"               # and is whole lines, so line-based editors can express it
    old = '''
    ...
    '''
    new = '''
    ...
    '''

    [[step]]                        # a whole new file (or a full rewrite)
    path = "report.py"
    content = '''
    ...
    '''

Hidden tests never enter the workspace: they are copied into the sandbox only when scoring
(see scoring.py), and the folders that hold them are never bound into an agent's sandbox.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from harnessrl.config import Config, ConfigError, load_config, read_file
from harnessrl.tasks.workspace import Workspace

TEST_GROUPS = ("requirement", "regression", "heldout")
BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"


class SuiteError(ValueError):
    """A suite or task folder that cannot be loaded; the message names the file and the fix."""


# ---------------------------------------------------------------------------------------
# Solutions


@dataclass(frozen=True)
class Replace:
    """Replace the exact text `old` (occurring once, whole lines) by `new` in `path`."""

    path: str
    old: str
    new: str

    def line_span(self, text: str) -> tuple[int, int]:
        """(first, last) 1-based line numbers that `old` covers in `text` (for `edit N:M`)."""
        at = text.find(self.old)
        if at < 0:
            raise ValueError(f"{self.path}: the text to replace is not in the file")
        first = text.count("\n", 0, at) + 1
        return first, first + self.old.rstrip("\n").count("\n")


@dataclass(frozen=True)
class WriteFile:
    """Create (or overwrite) `path` with `content`."""

    path: str
    content: str


Step = Replace | WriteFile


@dataclass(frozen=True)
class Solution:
    """A reference solution: ordered edit steps, and/or a shell script run in /app."""

    steps: tuple[Step, ...] = ()
    script: str | None = None
    support_dir: Path | None = None  # files solve.sh reads, bound read-only at /solution

    def apply_edits(self, workspace: Workspace) -> None:
        """Apply the edit steps with the workspace's own (containment-checked) file operations."""
        for step in self.steps:
            if isinstance(step, Replace):
                workspace.str_replace(step.path, step.old, step.new)
            else:
                workspace.write_text(step.path, step.content)

    def final_files(self, original: Mapping[str, str]) -> dict[str, str]:
        """{path: full new content} of every file the steps touch (for whole-file formats)."""
        files: dict[str, str] = {}
        for step in self.steps:
            if isinstance(step, Replace):
                text = files.get(step.path, original.get(step.path))
                if text is None or text.count(step.old) != 1:
                    raise ValueError(f"{step.path}: a replacement step does not match the file exactly once")
                files[step.path] = text.replace(step.old, step.new)
            else:
                files[step.path] = step.content
        return files


def _load_solution(folder: Path) -> Solution | None:
    edits_path, script_path = folder / "edits.toml", folder / "solve.sh"
    steps: list[Step] = []
    if edits_path.exists():
        try:
            data = tomllib.loads(edits_path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as err:
            raise SuiteError(f"{edits_path}: cannot parse: {err}") from None
        unknown = set(data) - {"step"}
        if unknown:
            raise SuiteError(f"{edits_path}: unknown top-level keys {sorted(unknown)}; use [[step]] tables.")
        for i, s in enumerate(data.get("step", []), 1):
            keys = set(s)
            if keys == {"path", "old", "new"}:
                if not s["old"]:
                    raise SuiteError(f"{edits_path}: step {i}: `old` is empty; use `content` to create a file.")
                steps.append(Replace(s["path"], s["old"], s["new"]))
            elif keys == {"path", "content"}:
                steps.append(WriteFile(s["path"], s["content"]))
            else:
                raise SuiteError(
                    f"{edits_path}: step {i} has keys {sorted(keys)}; a step is either (path, old, new) or (path, content)."
                )
    script = script_path.read_text(encoding="utf-8") if script_path.exists() else None
    if not steps and script is None:
        return None
    return Solution(tuple(steps), script)


# ---------------------------------------------------------------------------------------
# Task


class FactoryBug(Config):
    """One injected bug of a generated task: where it came from and which rule made it."""

    rule: str
    origin_file: str
    origin_function: str
    origin_line: int
    origin_col: int = 0
    change: str = ""  # what the rule changed (for analysis; never shown to the agent)


class FactoryMeta(Config):
    """task.toml's [factory] table: how `harnessrl tasks generate` made the task (docs/task-factory.md)."""

    seed: int
    split: Literal["train", "heldout", "sealed"]
    context: str
    files: int
    visibility: str
    bugs: int
    failing_cases: int = 0
    bug: list[FactoryBug] = Field(default_factory=list)


class TaskMeta(Config):
    """The validated contents of task.toml (after suite defaults)."""

    title: str = ""
    kind: Literal["code", "terminal"] = "code"
    category: str = ""
    difficulty: Literal["easy", "medium", "hard"] = "easy"
    tags: list[str] = Field(default_factory=list)
    needs_shell: bool = False  # only solvable by running commands, not by file edits alone
    agent_timeout_s: float = Field(600.0, gt=0)
    test_timeout_s: float = Field(120.0, gt=0)
    # reward functions on top of the verifier for this task (harnessrl.rewards; TRL's names), added to a run's own
    reward_funcs: list[str] = Field(default_factory=list)
    reward_weights: list[float] | None = None
    verifier_weight: float = 1.0
    factory: FactoryMeta | None = None  # a generated task's origin, rule and knobs

    @model_validator(mode="after")
    def _one_weight_per_function(self) -> "TaskMeta":
        if self.reward_weights is not None and len(self.reward_weights) != len(self.reward_funcs):
            raise ValueError(f"reward_weights: {len(self.reward_weights)} weights for {len(self.reward_funcs)} reward_funcs; "
                             "give one weight per function")
        return self

    def reward_hook(self) -> dict | None:
        """The reward hook this task declares ({reward_funcs, reward_weights, verifier_weight}), or None."""
        if not self.reward_funcs and self.verifier_weight == 1.0:
            return None
        return {"reward_funcs": list(self.reward_funcs), "reward_weights": self.reward_weights,
                "verifier_weight": self.verifier_weight}


@dataclass(frozen=True)
class Task:
    """One problem: an instruction, a starting workspace, hidden tests, a reference solution."""

    id: str  # "<suite>/<name>": the task_id every record carries
    name: str
    suite: str
    instruction: str
    root: Path  # the task folder (hidden from agents)
    workspace_dir: Path | None
    tests_dir: Path
    test_files: Mapping[str, tuple[str, ...]]  # group -> paths relative to tests_dir
    solution: Solution | None
    setup_script: str | None = None
    meta: TaskMeta = field(default_factory=TaskMeta)
    test_runner: Literal["pytest", "script"] = "pytest"  # "script": tests/test.sh writes a reward file
    test_script: str | None = None  # for test_runner="script": path relative to tests_dir
    source: str = "harnessrl"  # "harnessrl" | "terminal-bench" | "harbor"
    notes: tuple[str, ...] = ()  # how a foreign task was adapted
    env: Mapping[str, str] = field(default_factory=dict)  # for agent commands and tests (Dockerfile ENV)
    extra_files: tuple[tuple[Path, str], ...] = ()  # (host path, path in /app) copied after workspace_dir
    runtime: Literal["jail", "image"] = "jail"  # image: runs in the task's own image (tasks/images/)

    @property
    def task_id(self) -> str:  # the task contract's name for `id` (tasks/contract.py)
        return self.id

    @property
    def kind(self) -> str:
        return self.meta.kind

    @property
    def needs_shell(self) -> bool:
        return self.meta.needs_shell

    def fingerprint(self) -> str:
        """SHA-256 over every file of the task folder (names and bytes), for sealed splits."""
        h = hashlib.sha256(self.id.encode())
        for path in sorted(p for p in self.root.rglob("*") if p.is_file()):
            h.update(str(path.relative_to(self.root)).encode() + b"\0")
            h.update(path.read_bytes() + b"\0")
        return h.hexdigest()


def _test_files(tests_dir: Path) -> dict[str, tuple[str, ...]]:
    groups = {}
    for group in TEST_GROUPS:
        d = tests_dir / group
        groups[group] = tuple(sorted(str(p.relative_to(tests_dir)) for p in d.rglob("test_*.py"))) if d.is_dir() else ()
    return groups


def load_task(folder: Path, suite: str, defaults: Mapping | None = None) -> Task:
    """Load one task folder in the harnessrl format."""
    folder = Path(folder)
    meta_path = folder / "task.toml"
    if not meta_path.exists():
        raise SuiteError(f"{folder}: no task.toml; every task folder needs one (title, kind, ...).")
    try:
        meta = load_config(TaskMeta, meta_path, base=dict(defaults or {}))
    except ConfigError as err:
        raise SuiteError(str(err)) from None
    instruction_path = folder / "instruction.md"
    if not instruction_path.exists() or not instruction_path.read_text(encoding="utf-8").strip():
        raise SuiteError(f"{instruction_path}: missing or empty; write what the agent should do.")
    tests_dir = folder / "tests"
    test_files = _test_files(tests_dir)
    if not test_files["requirement"]:
        raise SuiteError(
            f"{tests_dir}/requirement: no test_*.py files; a task needs at least one requirement test "
            "(an empty test result never counts as solved)."
        )
    ws = folder / "workspace"
    setup = folder / "setup.sh"
    return Task(
        id=f"{suite}/{folder.name}",
        name=folder.name,
        suite=suite,
        instruction=instruction_path.read_text(encoding="utf-8").strip() + "\n",
        root=folder,
        workspace_dir=ws if ws.is_dir() else None,
        tests_dir=tests_dir,
        test_files=test_files,
        solution=_load_solution(folder / "solution"),
        setup_script=setup.read_text(encoding="utf-8") if setup.exists() else None,
        meta=meta,
    )


# ---------------------------------------------------------------------------------------
# Suite


@dataclass(frozen=True)
class Rejection:
    """A task folder a loader could not use, and why."""

    path: Path
    reason: str
    fix: str = ""  # what would make it load ("" when the loader has no advice)


@dataclass(frozen=True)
class Suite:
    """A named, versioned set of tasks."""

    name: str
    version: str
    description: str
    root: Path
    tasks: tuple[Task, ...]
    rejected: tuple[Rejection, ...] = ()

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)

    def __getitem__(self, key: str | int) -> Task:
        if isinstance(key, int):
            return self.tasks[key]
        for t in self.tasks:
            if key in (t.id, t.name):
                return t
        for r in self.rejected:
            if key.rsplit("/", 1)[-1] == r.path.name:
                raise KeyError(f"task {key!r} of suite {self.name!r} was not loaded: {r.reason}"
                               + (f"; fix: {r.fix}" if r.fix else ""))
        raise KeyError(f"suite {self.name!r} has no task {key!r}; known: {', '.join(t.name for t in self.tasks[:10])}...")

    @property
    def ids(self) -> list[str]:
        return [t.id for t in self.tasks]

    def select(self, names: list[str]) -> Suite:
        """A sub-suite with the named tasks (names or ids), in the given order."""
        return Suite(self.name, self.version, self.description, self.root, tuple(self[n] for n in names))


class SuiteMeta(Config):
    name: str
    version: str = "1"
    description: str = ""
    format: Literal["harnessrl", "terminal-bench", "harbor"] = "harnessrl"
    tasks: list[str] | None = None  # an explicit order/subset; default: every task folder


def load_suite_folder(root: str | Path) -> Suite:
    """Load a folder with suite.toml in the harnessrl format (see the module docstring)."""
    root = Path(root)
    meta_path = root / "suite.toml"
    data = read_file(meta_path)
    unknown = set(data) - {"suite", "defaults"}
    if unknown:
        raise SuiteError(f"{meta_path}: unknown sections {sorted(unknown)}; use [suite] and [defaults].")
    try:
        meta = SuiteMeta.model_validate(data.get("suite", {}))
    except Exception as err:  # pydantic's message names the field
        raise SuiteError(f"{meta_path} [suite]: {err}") from None
    if meta.format != "harnessrl":
        raise SuiteError(f"{meta_path}: format {meta.format!r} is loaded by harnessrl.tasks.loaders.load_suite.")
    defaults = data.get("defaults", {})
    names = meta.tasks if meta.tasks is not None else sorted(
        p.name for p in root.iterdir() if p.is_dir() and (p / "task.toml").exists()
    )
    tasks = tuple(load_task(root / n, meta.name, defaults) for n in names)
    if not tasks:
        raise SuiteError(f"{root}: no task folders (a folder with task.toml) found.")
    return Suite(meta.name, meta.version, meta.description, root, tasks)


def builtin_suites() -> list[str]:
    """Names of the suites shipped with harnessrl."""
    return sorted(p.name for p in BUILTIN_DIR.iterdir() if (p / "suite.toml").exists()) if BUILTIN_DIR.is_dir() else []


def hidden_paths(suite: Suite) -> list[Path]:
    """Folders an agent's sandbox must never see for this suite (tests and solutions live there)."""
    return [Path(os.path.abspath(suite.root))]
