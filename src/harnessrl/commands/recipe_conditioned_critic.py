"""`harnessrl recipe conditioned-critic`: shared vs conditioned vs multihead critic in multi-context PPO.

Registered on the recipe group by commands/recipe.py (one line); kept in its own file.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from harnessrl.commands.common import (
    path_arg, StoreOption, check_store_writable, check_writable_dir, console, default_store, fail, progress, user_errors,
)
from harnessrl.envs.multicontext import EnvConfigError


def conditioned_critic(
    scale: str = typer.Option("small", "--scale", help="small: minutes on a laptop CPU; medium: 2 Procgen games, unseen levels, <= 100 min on 2 cores; paper: the full protocol."),
    config: Path | None = typer.Option(None, "--config", "-c", parser=path_arg, help="YAML/TOML settings applied on the scale's defaults."),
    overrides: list[str] = typer.Option([], "--set", help="Override a setting: KEY=VALUE (repeatable), e.g. --set seeds=[0,1]."),
    out: Path = typer.Option(Path("runs/conditioned-critic"), "--out", "-o", parser=path_arg, help="Run folders, figures and report.html."),
    store: Path | None = StoreOption,
    resume: bool = typer.Option(False, "--resume", help="Continue the runs in --out from their checkpoints."),
    workers: int | None = typer.Option(None, "--workers", "-j", min=1, help="Parallel training processes (default 2)."),
) -> None:
    """Shared vs conditioned vs multihead critic in multi-context PPO (bandit, CartPole variants, MiniGrid levels)."""
    from harnessrl.records import RecordStore
    from harnessrl.recipes import conditioned_critic as recipe
    from harnessrl.recipes.conditioned_critic_report import build_report, store_episodes

    with user_errors(), _env_errors():
        sets = list(overrides) + ([f"workers={workers}"] if workers else [])
        cfg = recipe.load(scale, config, sets)
        jobs = recipe.jobs(cfg)
        check_writable_dir(out, "--out")
        check_store_writable(store or default_store())
        console.print(f"conditioned-critic ({cfg.scale}): {len(jobs)} PPO runs on {cfg.workers} process(es) -> {out}")
        t0 = time.perf_counter()
        with progress() as bar:
            total = bar.add_task("PPO updates (all runs)", total=None)
            seen: dict[str, tuple[int, int]] = {}

            def on_progress(key: str, i: int, n: int) -> None:
                seen[key] = (i, n)
                done = sum(a for a, _ in seen.values())
                expected = sum(b for _, b in seen.values()) * len(jobs) / len(seen)
                bar.update(total, completed=done, total=expected)

            results = recipe.run_recipe(cfg, out, resume=resume, on_progress=on_progress)
        wall = time.perf_counter() - t0
        store_path = store or default_store()
        written = store_episodes(cfg, results, out, RecordStore(store_path))
        args = sys.argv[1:] if sys.argv[1:2] == ["recipe"] else ["recipe", "conditioned-critic"]
        report = build_report(cfg, results, out, store_path, "harnessrl " + " ".join(shlex.quote(a) for a in args), wall)
    console.print(f"{written} evaluation episodes -> {store_path}")
    console.print(f"report: {report}  ({wall:.0f} s)")


@contextmanager
def _env_errors() -> Iterator[None]:
    """An environment that cannot be built or returns NaN/inf is a user error: a message, exit code 2."""
    try:
        yield
    except EnvConfigError as err:
        raise fail(str(err)) from None
