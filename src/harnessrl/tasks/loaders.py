"""Load suites: built-in names, harnessrl folders, and Terminal-Bench / Harbor task folders.

    suite = load_suite("code-v1")                 # a built-in suite
    suite = load_suite("path/to/suite")           # a folder with suite.toml
    suite = load_suite("path/to/tb-tasks")        # a folder of Terminal-Bench or Harbor tasks
    suite.rejected                                # [Rejection(path, reason, fix)] for tasks we cannot run

Foreign tasks (Terminal-Bench, Harbor) load in tasks.foreign, which reads their Dockerfiles and
scripts in sandbox terms through tasks.foreign_env; their names are re-exported here.
"""

from __future__ import annotations

from pathlib import Path

from harnessrl.config import read_file
from harnessrl.tasks.base import BUILTIN_DIR, Suite, SuiteError, builtin_suites, load_suite_folder
from harnessrl.tasks.foreign import load_foreign, load_harbor_task, load_terminal_bench_task
from harnessrl.tasks.foreign_env import Pins, Rejected, read_dockerfile

__all__ = ["Pins", "Rejected", "load_foreign", "load_harbor_task", "load_suite", "load_terminal_bench_task", "read_dockerfile"]


def load_suite(spec: str | Path, pins: Pins | None = None, runtime: str | None = None) -> Suite:
    """A built-in suite by name, a harnessrl suite folder, or a folder of foreign tasks.

    `pins` overrides suite.toml's `pins` for foreign tasks (default "exact"). `runtime` ("jail" or
    "image") overrides suite.toml's `runtime` for foreign tasks: "image" builds each task's own
    Dockerfile and runs its episodes in that image (tasks/images/); built-in suites keep the jail."""
    if runtime not in (None, "jail", "image"):
        raise SuiteError(f"runtime = {runtime!r}: use \"jail\" (the host under the sandbox) or \"image\" (the task's own image)")
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
        if (runtime or info.get("runtime", "jail")) == "image":
            return _image_suite(root, info.get("name"), str(info.get("version", "1")), info.get("description", ""))
        return load_foreign(root, info.get("name"), str(info.get("version", "1")), info.get("description", ""),
                            pins or info.get("pins", "exact"))
    if runtime == "image":
        return _image_suite(root)
    suite = load_foreign(root, pins=pins or "exact")
    if not suite.tasks and not suite.rejected:
        raise SuiteError(f"{root}: no tasks found (expected suite.toml, or task folders with task.yaml / task.toml).")
    return suite


def _image_suite(root: Path, *args) -> Suite:
    from harnessrl.tasks.images.tasks import load_image_suite

    return load_image_suite(root, *args)
