"""Helpers every command shares: the console, the default store path, error exits."""

from __future__ import annotations

import os
from contextlib import contextmanager
from collections.abc import Callable, Iterator
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from harnessrl.config import ConfigError
from harnessrl.records import RecordStoreError

console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def default_store() -> Path:
    return Path(os.environ.get("HARNESSRL_STORE", "runs/store"))


StoreOption = typer.Option(None, "--store", "-s", help="Record store directory [env HARNESSRL_STORE, default runs/store].")


def fail(message: str, code: int = 2) -> typer.Exit:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the errors meant for users into a clean message and exit code 2 (no traceback)."""
    try:
        yield
    except (ConfigError, RecordStoreError, FileNotFoundError) as err:
        raise fail(str(err)) from None


def progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    )


@contextmanager
def stage_progress() -> Iterator[Callable[[str, int, int | None], None]]:
    """A progress display with one bar per stage, for recipes that report `tick(stage, done, total)`."""
    with progress() as bar:
        tasks: dict[str, int] = {}

        def tick(stage: str, i: int, n: int | None) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=n)
            bar.update(tasks[stage], completed=i, total=n)

        yield tick
