"""`harnessrl seal`: put tasks and/or harnesses out of training's reach; verify a seal is intact.

    harnessrl seal --name unseen --suite code-v1 --tasks fix-leap-year,fix-word-count --harness terminus
    harnessrl seal verify unseen --store runs/store
    harnessrl seal list
"""

from __future__ import annotations

import re
from pathlib import Path

import typer
from rich.markup import escape
from rich.text import Text
from rich.table import Table

from harnessrl.commands.common import path_arg, StoreOption, check_writable_dir, console, default_store, fail, user_errors

app = typer.Typer(help="Sealed splits: hash tasks/harnesses into a manifest; verify it and its one evaluation.",
                  invoke_without_command=True)
SealsOption = typer.Option(None, "--seals", parser=path_arg, help="Seals folder [env HARNESSRL_SEALS, default runs/seals].")


def _split(text: str) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


@app.callback()
def create(
    ctx: typer.Context,
    name: str = typer.Option(None, "--name", help="Name of the new seal."),
    suite: str = typer.Option(None, "--suite", help="Suite the sealed tasks come from (name or folder)."),
    tasks: str = typer.Option("", "--tasks", help="Tasks to seal (names or ids, comma-separated)."),
    harness: str = typer.Option("", "--harness", "-H", help="Harnesses to seal (ids or spec files, comma-separated)."),
    note: str = typer.Option("", "--note", help="Free text kept in the manifest."),
    seals: Path = SealsOption,
) -> None:
    """Create a seal (when no subcommand is given)."""
    if ctx.invoked_subcommand is not None:
        return
    from harnessrl.evaluate.seal import create_seal
    from harnessrl.harness.base import make_harness
    from harnessrl.rollout.suites import load_suite, pick_tasks

    from harnessrl.evaluate.seal import seals_dir

    if not name or not name.strip():
        raise fail("give --name for the new seal (or a subcommand: verify, list)")
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", name):
        raise fail(f"--name {name!r}: use letters, digits, '.', '_' and '-' (it names a file in the seals folder)")
    with user_errors():
        check_writable_dir(seals_dir(seals), "--seals")
        chosen = []
        if _split(tasks):
            if not suite:
                raise fail("--tasks needs --suite")
            chosen = pick_tasks(load_suite(suite), _split(tasks))  # a rejected task's reason, not "no task"
        hs = [make_harness(h) for h in _split(harness)]
        seal = create_seal(name, tasks=chosen, harnesses=hs, suite=suite or "", directory=seals, note=note)
    console.print(f"sealed {len(chosen)} tasks and {len(hs)} harnesses -> {seal.path}\nmanifest sha256 {seal.hash}")


@app.command()
def verify(
    name: str = typer.Argument(..., help="The seal's name (or its .seal.json path)."),
    store: Path = StoreOption,
    check_tasks: bool = typer.Option(True, "--check-tasks/--no-check-tasks", help="Re-fingerprint the sealed tasks and harnesses."),
    seals: Path = SealsOption,
) -> None:
    """Recompute every hash: manifest, its one evaluation, the stored episodes. Exit 1 on any edit."""
    from harnessrl.evaluate.seal import load_seal, verify_seal
    from harnessrl.harness.base import make_harness
    from harnessrl.records import RecordStore
    from harnessrl.rollout.suites import load_suite

    with user_errors():
        seal = load_seal(name, seals)
        tasks, hs = [], []
        if check_tasks:
            if seal.manifest.get("suite") and seal.task_ids:
                tasks = list(load_suite(seal.manifest["suite"]))
            for hid in seal.harness_ids:
                try:
                    hs.append(make_harness(hid))
                except Exception:  # a user spec file that moved: its fingerprint cannot be checked
                    console.print(Text(f"cannot load harness {hid!r} to re-check it", style="yellow"))
        s = None
        if seal.eval_path.exists():
            s = RecordStore(store or default_store(), create=False)
        problems = verify_seal(name, s, seals, tasks=tasks, harnesses=hs)
    if problems:
        for p in problems:
            console.print(f"[bold red]TAMPERED[/] {escape(str(p))}", markup=True)
        raise typer.Exit(1)
    evaluated = "evaluated once" if seal.eval_path.exists() else "not evaluated yet"
    console.print(f"[bold green]intact[/] seal {escape(str(seal.name))} ({len(seal.task_ids)} tasks, {len(seal.harness_ids)} harnesses; {escape(str(evaluated))})", markup=True)


@app.command("list")
def list_(seals: Path = SealsOption) -> None:
    """Every seal in the seals folder."""
    from harnessrl.evaluate.seal import all_seals, seals_dir

    with user_errors():
        folder = seals_dir(seals)
        if folder.exists() and not folder.is_dir():
            raise fail(f"--seals {folder}: not a folder; give the seals folder")
        rows = all_seals(seals)
    t = Table(title="Seals")
    for col in ("name", "suite", "tasks", "harnesses", "evaluated", "sha256"):
        t.add_column(col)
    for s in rows:
        t.add_row(s.name, s.manifest.get("suite", ""), str(len(s.task_ids)), ", ".join(sorted(s.harness_ids)),
                  "yes" if s.eval_path.exists() else "no", s.hash[:16])
    console.print(t)
