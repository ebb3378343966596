"""One row per task folder of a suite: loaded or rejected, why, and what would fix it.

    rows = check_rows(load_suite("path/to/tb-tasks"))
    # [CheckRow(name="hello-file", source="terminal-bench", status="loaded", reason="", fix=""), ...]

`harnessrl tasks check DIR` prints these rows as a table; the same reasons are what
`--tasks NAME` reports when NAME was rejected (rollout.suites.pick_tasks).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harnessrl.config import read_file
from harnessrl.tasks.base import Suite, SuiteError, load_task
from harnessrl.tasks.isolation import grading_isolation


@dataclass(frozen=True)
class CheckRow:
    name: str
    source: str  # "terminal-bench" | "harbor" | "harnessrl" | "?" (rejected before its format was known)
    status: str  # "loaded" | "rejected"
    reason: str  # why rejected; for a loaded task, what was adapted that changes what runs (pins)
    fix: str
    grading: str = ""  # a loaded task: how far grading is isolated from the agent's code (tasks/isolation.py)


def _source(path) -> str:
    if (path / "task.yaml").exists():
        return "terminal-bench"
    if (path / "task.toml").exists():
        return "harbor"
    return "?"


def check_rows(suite: Suite) -> list[CheckRow]:
    """Loaded and rejected tasks of `suite`, sorted by name."""
    rows = []
    for task in suite.tasks:
        loose = [n for n in task.notes if "pins=loose" in n]
        iso = grading_isolation(task)
        notes = loose + ([iso.why] if iso.level != "bridged" else [])
        rows.append(CheckRow(task.name, task.source, "loaded", "; ".join(notes), "", iso.level))
    for r in suite.rejected:
        rows.append(CheckRow(r.path.name, _source(r.path), "rejected", r.reason, r.fix))
    return sorted(rows, key=lambda row: row.name)


def _native_suite_meta(folder: Path) -> dict | None:
    """suite.toml of a harnessrl-format suite folder (None: no such file, or a foreign format)."""
    meta = folder / "suite.toml"
    if not meta.is_file():
        return None
    data = read_file(meta)
    return data if data.get("suite", {}).get("format", "harnessrl") == "harnessrl" else None


def _is_native_task(folder: Path) -> bool:
    """A harnessrl task folder (task.toml + tests/requirement or workspace/), not a Harbor one (tests/test.sh)."""
    if not (folder / "task.toml").is_file() or (folder / "tests" / "test.sh").exists() or (folder / "environment").exists():
        return False
    return _native_suite_meta(folder.parent) is not None or (folder / "tests" / "requirement").is_dir() \
        or (folder / "workspace").is_dir()


def _native_row(folder: Path, suite: str, defaults: dict) -> CheckRow:
    try:
        task = load_task(folder, suite, defaults)
    except SuiteError as err:
        reason, _, fix = str(err).partition("; ")
        return CheckRow(folder.name, "harnessrl", "rejected", reason, fix)
    iso = grading_isolation(task)
    return CheckRow(folder.name, "harnessrl", "loaded", iso.why if iso.level != "bridged" else "", "", iso.level)


def check_native(folder: Path) -> tuple[str, list[CheckRow]] | None:
    """Rows for a harnessrl suite folder (every task checked, not only up to the first bad one) or for one
    harnessrl task folder (checked with its suite's defaults when it sits in one); None for other folders
    (Terminal-Bench / Harbor tasks: `load_suite` and `check_rows`)."""
    folder = Path(folder)
    if _is_native_task(folder):
        parent = _native_suite_meta(folder.parent) or {}
        suite = parent.get("suite", {}).get("name", folder.parent.name)
        return suite, [_native_row(folder, suite, parent.get("defaults", {}))]
    meta = _native_suite_meta(folder)
    if meta is None:
        return None
    suite = meta.get("suite", {}).get("name", folder.name)
    names = meta.get("suite", {}).get("tasks") or sorted(p.name for p in folder.iterdir() if p.is_dir() and (p / "task.toml").exists())
    return suite, [_native_row(folder / n, suite, meta.get("defaults", {})) for n in names]
