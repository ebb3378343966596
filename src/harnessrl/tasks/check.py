"""One row per task folder of a suite: loaded or rejected, why, and what would fix it.

    rows = check_rows(load_suite("path/to/tb-tasks"))
    # [CheckRow(name="hello-file", source="terminal-bench", status="loaded", reason="", fix=""), ...]

`harnessrl tasks check DIR` prints these rows as a table; the same reasons are what
`--tasks NAME` reports when NAME was rejected (rollout.suites.pick_tasks).
"""

from __future__ import annotations

from dataclasses import dataclass

from harnessrl.tasks.base import Suite


@dataclass(frozen=True)
class CheckRow:
    name: str
    source: str  # "terminal-bench" | "harbor" | "harnessrl" | "?" (rejected before its format was known)
    status: str  # "loaded" | "rejected"
    reason: str  # why rejected; for a loaded task, what was adapted that changes what runs (pins)
    fix: str


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
        rows.append(CheckRow(task.name, task.source, "loaded", "; ".join(loose), ""))
    for r in suite.rejected:
        rows.append(CheckRow(r.path.name, _source(r.path), "rejected", r.reason, r.fix))
    return sorted(rows, key=lambda row: row.name)
