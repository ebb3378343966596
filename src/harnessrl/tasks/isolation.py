"""How far a task's grading is isolated from the agent's code: what `tasks check` and the audit say.

    iso = grading_isolation(task)
    iso.level    # "bridged" | "partial" | "script"
    iso.why      # one line a user can act on

- **bridged**: pytest files run by harnessrl's grader. The tests' imports of the agent's modules
  are answered by a child process (tasks/grader_bridge.py); the process that writes the verdict
  never executes the agent's code.
- **partial**: the same, but a test file runs code by means the bridge cannot route through the
  child (`exec`/`runpy`/`spec_from_file_location` on a file, `ctypes` on a library, `pickle.load`):
  the verdict process refuses those on an agent path (the test then fails, never passes), and a
  test that unpickles agent data runs what the pickle names. Rewrite those tests to use
  subprocesses or plain imports.
- **script**: the task's own test script (Harbor's tests/test.sh) decides the reward in processes
  it starts; if it runs pytest over test files that import the agent's code, that code runs in the
  process whose exit status becomes the reward. Not isolated: know it before training on the task.

The scan is static (ast over the test files, a regex over the script): it finds the usual forms,
not every way a test could execute agent code.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from harnessrl.tasks.contract import TaskLike

LEVELS = ("bridged", "partial", "script")
_EXEC_CALLS = {"exec", "execfile", "run_path", "run_module", "spec_from_file_location", "CDLL", "PyDLL", "LoadLibrary",
               "load", "loads", "Unpickler"}
_EXEC_MODULES = {"runpy", "ctypes", "pickle", "dill", "cloudpickle", "marshal"}


@dataclass(frozen=True)
class Isolation:
    level: str  # one of LEVELS
    why: str


def _test_paths(task: TaskLike) -> list[Path]:
    return [task.tests_dir / rel for files in task.test_files.values() for rel in files]


def in_process_execution(path: Path) -> list[str]:
    """`file:line name` for each call in a test file that executes code the bridge cannot route."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return []
    modules = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
               if a.name.split(".")[0] in _EXEC_MODULES}
    modules |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                and n.module.split(".")[0] in _EXEC_MODULES}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        owner = fn.value.id if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) else ""
        if name == "exec" or name == "spec_from_file_location" or (name in _EXEC_CALLS and owner in modules):
            found.append(f"{path.name}:{node.lineno} {owner + '.' if owner else ''}{name}")
    return found


def imported_names(path: Path) -> set[str]:
    """Top-level module names a test file imports."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return set()
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}
    return names


def grading_isolation(task: TaskLike) -> Isolation:
    if task.test_runner == "script":
        script = (task.tests_dir / (task.test_script or "test.sh")).read_text(encoding="utf-8", errors="replace")
        runs_pytest = bool(re.search(r"\b(pytest|py\.test|python3?\s+\S*test)", script))
        foreign = sorted({n for p in _test_paths(task) for n in imported_names(p)} - set(sys.stdlib_module_names)
                         - {"pytest", "_pytest"})
        if runs_pytest and foreign:
            return Isolation("script", f"{task.test_script} runs tests importing {', '.join(foreign[:6])} in its own "
                                       "process: the agent's code there decides the reward (not isolated)")
        return Isolation("script", f"{task.test_script} decides the reward in processes it starts; its tests import "
                                   "nothing outside the standard library (the agent's code runs as programs only)")
    hits = [h for p in _test_paths(task) for h in in_process_execution(p)]
    if hits:
        return Isolation("partial", "tests execute code themselves: " + ", ".join(hits[:4])
                         + " (refused on agent paths in the verdict process; use a subprocess)")
    return Isolation("bridged", "the tests' imports of the agent's code run in a child process")


__all__ = ["LEVELS", "Isolation", "grading_isolation", "imported_names", "in_process_execution"]
