"""`harnessrl tasks check DIR`: which task folders load, which are rejected, why, and the fix.

    harnessrl tasks check path/to/tb-tasks               # a table, one row per task folder
    harnessrl tasks check path/to/tb-tasks --pins loose  # accept version mismatches (noted)
    harnessrl tasks check path/to/tb-tasks --strict      # exit 1 when any task is rejected
    harnessrl tasks generate runs/factory --seed 0       # suites of generated bug-fix tasks (docs/task-factory.md)
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from harnessrl.commands.common import console, fail

app = typer.Typer(help="Task folders: check which load and why others do not; build their images; generate bug-fix suites.",
                  no_args_is_help=True)


@app.command("check")
def check(
    folder: Path = typer.Argument(..., help="A suite folder, a folder of Terminal-Bench/Harbor tasks, or one task."),
    pins: str = typer.Option(None, "--pins", help="exact: refuse tasks whose pinned Python packages differ from "
                             "this host's (default, or suite.toml's pins); loose: load them, noting each mismatch."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any task is rejected."),
    runtime: str = typer.Option("jail", "--runtime", help="jail: replayed on the host under the sandbox (default); "
                                "image: built from the task's own Dockerfile (docs/task-images.md)."),
) -> None:
    """Print one row per task: loaded or rejected, the reason and the fix."""
    from harnessrl.tasks.base import SuiteError
    from harnessrl.config import ConfigError

    if runtime not in ("jail", "image"):
        raise fail(f"--runtime {runtime}: use jail or image")
    if runtime == "image":
        return _check_images(folder, strict)
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
    for col in ("task", "format", "status", "grading", "reason", "fix"):
        table.add_column(col, overflow="fold")
    for row in rows:
        style = "green" if row.status == "loaded" else "red"
        table.add_row(row.name, row.source, Text(row.status, style=style),
                      Text(row.grading, style="green" if row.grading == "bridged" else "yellow"), row.reason, row.fix)
    console.print(table)
    loose = [row for row in rows if row.grading not in ("", "bridged")]
    if loose:
        console.print(Text(f"{len(loose)} task(s) graded with the agent's code reachable from the verdict (grading "
                           "partial/script): see the reason column and docs/security.md", style="yellow"))
    if strict and rejected:
        raise typer.Exit(1)


@app.command("generate")
def generate(
    out: Path = typer.Argument(..., help="An empty or new folder: OUT/<name>-train, -heldout, -sealed and manifest.json."),
    seed: int = typer.Option(0, "--seed", help="Same seed, byte-identical suites."),
    per_origin: int = typer.Option(5, "--per-origin", help="At most this many tasks per origin function (0: no limit)."),
    pairs: float = typer.Option(0.25, "--pairs", help="Two-bug tasks, as a share of the one-bug tasks."),
    name: str = typer.Option("factory", "--name", help="Suite name prefix (task ids are <name>-<split>/<task>)."),
    rules: str = typer.Option("", "--rules", help="Comma-separated rules to use (default: all)."),
    modules: str = typer.Option("", "--modules", help="Comma-separated corpus modules to use (default: all)."),
    confirm: int = typer.Option(20, "--confirm", help="Re-check this many tasks with a real pytest run (buggy fails, "
                                "fixed passes) on top of the in-process check of every task; 0: skip."),
    sources: str = typer.Option("corpus", "--sources", help="corpus (shipped) and/or pypi (pinned packages with their "
                                "own tests, after `harnessrl tasks fetch-sources`), comma-separated."),
) -> None:
    """Write suites of bug-fix tasks made by rule from the corpus, each checked: its tests fail, the reference edit passes."""
    import time

    from harnessrl.tasks.factory import RULES
    from harnessrl.tasks.factory import generate as run

    started = time.perf_counter()
    try:
        data = run(out, seed=seed, per_origin=per_origin, pairs=pairs, name=name,
                   rules=tuple(r for r in rules.split(",") if r) or RULES, modules=[m for m in modules.split(",") if m] or None,
                   confirm=confirm, sources=tuple(x for x in sources.split(",") if x))
    except (ValueError, OSError, RuntimeError) as err:  # FileExistsError is an OSError
        raise fail(str(err)) from None
    table = Table(title=f"{data['tasks']} tasks from {data['origins']} origin functions ({data['origin_files']} files), "
                  f"seed {seed}, {time.perf_counter() - started:.0f} s")
    for col in ("split", "tasks", "origins", "suite"):
        table.add_column(col)
    for split, n in data["per_split"].items():
        table.add_row(split, str(n), str(data["origins_per_split"][split]), str(out / f"{name}-{split}") if n else "")
    console.print(table)
    console.print("per rule: " + ", ".join(f"{k} {v}" for k, v in data["per_rule"].items()), highlight=False)
    console.print(f"tried {data['candidates_tried']} candidates: {data['not_a_task']} not a task, "
                  f"{data['duplicates']} near-duplicates; at most {data['max_per_origin']} tasks per origin; "
                  f"{data['confirmed_with_pytest']} re-checked with pytest", highlight=False)


@app.command("fetch-sources")
def fetch_sources() -> None:
    """Download the factory's pinned PyPI sources once (sdists, hash-checked) into $HARNESSRL_SOURCES."""
    from harnessrl.tasks.factory.pypi import PINS, cache_dir, fetch_sources as fetch

    try:
        fetch(say=lambda m: console.print(m, highlight=False))
    except RuntimeError as err:
        raise fail(str(err)) from None
    console.print(f"{len(PINS)} source(s) in {cache_dir()}; use them with `harnessrl tasks generate OUT --sources corpus,pypi`",
                  highlight=False)


def task_folders(folder: Path) -> list[Path]:
    """One task folder (task.yaml or task.toml), or every such folder directly under `folder`."""
    if (folder / "task.yaml").exists() or (folder / "task.toml").exists():
        return [folder]
    return sorted(p for p in folder.iterdir() if p.is_dir() and ((p / "task.yaml").exists() or (p / "task.toml").exists()))


@app.command("build")
def build(
    folder: Path = typer.Argument(..., help="A Terminal-Bench/Harbor task folder, or a folder of them."),
    budget: str = typer.Option(None, "--budget", help="After building, prune the image store to this size (e.g. 20G)."),
    timeout_s: float = typer.Option(3600.0, "--timeout", help="Seconds one image build may take."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any task does not build."),
) -> None:
    """Build each task's image from its own Dockerfile (plus the grader layer); cached by the build inputs."""
    from harnessrl.commands.images import open_store, parse_size
    from harnessrl.tasks.images.build import BuildRefused, build_task, task_build_spec

    if not folder.is_dir():
        raise fail(f"{folder}: not a folder; give a task folder or a folder of task folders")
    folders = task_folders(folder)
    if not folders:
        raise fail(f"{folder}: no task folders (task.yaml or task.toml) in it")
    store = open_store()
    budget_bytes = parse_size(budget) if budget else None
    table = Table(title=f"{len(folders)} task(s), images in {store.root}")
    for col in ("task", "status", "reason", "seconds", "MB", "image", "substitutions"):
        table.add_column(col, overflow="fold")
    failed = 0
    for i, task in enumerate(folders, 1):
        console.print(f"[{i}/{len(folders)}] {task.name}", highlight=False)
        try:
            built = build_task(store, task_build_spec(task), say=lambda m: console.print(m, highlight=False, markup=False),
                               timeout_s=timeout_s, budget_bytes=budget_bytes)
        except BuildRefused as err:
            failed += 1
            table.add_row(task.name, Text("refused", style="red"), err.code, "", "", "", err.reason)
            continue
        notes = "; ".join(s["note"] for s in built.stand_ins)
        table.add_row(task.name, Text("cached" if built.cached else "built", style="green"), "",
                      f"{built.seconds:.0f}", f"{built.bytes / 1e6:.0f}", built.image, notes)
    console.print(table)
    if strict and failed:
        raise typer.Exit(1)


def _check_images(folder: Path, strict: bool) -> None:
    """`tasks check --runtime image`: one row per task folder (tasks/images/check.py)."""
    from harnessrl.tasks.images.check import image_rows
    from harnessrl.tasks.images.store import ImageStore, images_unavailable

    if not folder.is_dir():
        raise fail(f"{folder}: not a folder; give a task folder or a folder of task folders")
    folders = task_folders(folder)
    if not folders:
        raise fail(f"{folder}: no task folders (task.yaml or task.toml) in it")
    store = None if images_unavailable() else ImageStore.default()
    rows = image_rows(store, folders)
    refused = sum(r.status == "refused" for r in rows)
    table = Table(title=f"{len(rows)} task(s), runtime image: {len(rows) - refused} buildable or built, {refused} refused"
                  + ("" if store else f" (images unavailable here: {images_unavailable()})"))
    for col in ("task", "runtime", "status", "reason", "detail", "substitutions", "notes"):
        table.add_column(col, overflow="fold")
    for row in rows:
        style = {"built": "green", "buildable": "yellow"}.get(row.status, "red")
        table.add_row(row.name, row.runtime, Text(row.status, style=style), row.reason, row.detail,
                      "; ".join(row.substitutions), ", ".join(row.notes))
    console.print(table)
    if strict and refused:
        raise typer.Exit(1)
