"""`harnessrl tasks check DIR`: which task folders load, which are rejected, why, and the fix.

    harnessrl tasks check path/to/tb-tasks               # a table, one row per task folder
    harnessrl tasks check path/to/tb-tasks --pins loose  # accept version mismatches (noted)
    harnessrl tasks check path/to/tb-tasks --strict      # exit 1 when any task is rejected
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from harnessrl.commands.common import console, fail

app = typer.Typer(help="Task folders: check which load and why others do not.", no_args_is_help=True)


@app.command("check")
def check(
    folder: Path = typer.Argument(..., help="A suite folder, a folder of Terminal-Bench/Harbor tasks, or one task."),
    pins: str = typer.Option(None, "--pins", help="exact: refuse tasks whose pinned Python packages differ from "
                             "this host's (default, or suite.toml's pins); loose: load them, noting each mismatch."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any task is rejected."),
) -> None:
    """Print one row per task: loaded or rejected, the reason and the fix."""
    from harnessrl.tasks.base import SuiteError
    from harnessrl.config import ConfigError
    from harnessrl.tasks.check import check_native, check_rows
    from harnessrl.tasks.loaders import load_suite

    if not folder.is_dir():
        raise fail(f"{folder}: not a folder; give a folder of task folders (or one task folder)")
    if pins not in (None, "exact", "loose"):
        raise fail(f"--pins {pins}: use exact or loose")
    try:
        native = check_native(folder)
        if native is not None:
            name, rows = native
        else:
            suite = load_suite(folder, pins=pins)
            name, rows = suite.name, check_rows(suite)
    except (SuiteError, ConfigError) as err:
        raise fail(str(err)) from None
    rejected = sum(row.status == "rejected" for row in rows)
    table = Table(title=f"{name}: {len(rows) - rejected} loaded, {rejected} rejected")
    for col in ("task", "format", "status", "reason", "fix"):
        table.add_column(col, overflow="fold")
    for row in rows:
        style = "green" if row.status == "loaded" else "red"
        table.add_row(row.name, row.source, Text(row.status, style=style), row.reason, row.fix)
    console.print(table)
    if strict and rejected:
        raise typer.Exit(1)
