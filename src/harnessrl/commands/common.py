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


def lm_recipe_config(model_cls, scale: str, preset: dict, config: Path | None, overrides: list[str], out: Path,
                     resume: bool, **given):
    """An LM recipe's config from its scale preset, a file, --set overrides and the options given (None = not
    given); refuses --scale paper without a model and a used output folder without --resume."""
    from harnessrl.config import load_config

    sets = list(overrides) + [f"{k}={v}" for k, v in given.items() if v is not None]
    cfg = load_config(model_cls, config, sets, base=preset)
    if cfg.scale == "paper" and not cfg.model:
        raise typer.BadParameter(f"--scale {scale} needs --model (a real model, on a GPU)")
    if out.exists() and any(out.iterdir()) and not resume:
        console.print(f"[yellow]{out} is not empty; pass --resume to continue it, or choose another --out[/]")
        raise typer.Exit(2)
    return cfg
