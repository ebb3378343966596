"""`harnessrl recipe reward-tilt`: the drawer experiment of the tilt paper (registered in commands/recipe.py)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import typer

from harnessrl.commands.common import StoreOption, console, default_store, stage_progress, user_errors


def reward_tilt(
    scale: str = typer.Option("small", "--scale", help="small: minutes on a laptop CPU; paper: more demos, samples, rounds, seeds."),
    task: str = typer.Option("drawer", "--task", help="drawer (built in) or metaworld-drawer (Meta-World's Sawyer scene; needs `make metaworld` and .venv-metaworld/bin/harnessrl)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML/TOML file with settings (applied on the scale's defaults)."),
    overrides: list[str] = typer.Option([], "--set", help="Override a setting: KEY=VALUE (repeatable), e.g. --set finetune.rounds=3."),
    out: Path = typer.Option(Path("runs/reward-tilt"), "--out", "-o", help="Folder for report.html and its figures."),
    store: Path | None = StoreOption,
) -> None:
    """Learned visual reward vs outcome verifier on a drawer task: tilt-model predictions next to observed outcomes."""
    from harnessrl.config import load_config
    from harnessrl.records import RecordStore
    from harnessrl.recipes import reward_tilt as recipe
    from harnessrl.recipes.reward_tilt_report import build_report

    with user_errors():
        cfg = load_config(recipe.RewardTiltConfig, config, overrides, base=recipe.preset(scale, task))
        store_path = store or default_store()
        console.print(f"reward-tilt ({cfg.scale}, {cfg.task}): store {store_path}, report -> {out}")
        with stage_progress() as on_progress:
            res = recipe.run(cfg, RecordStore(store_path), on_progress)
        command = "harnessrl " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "harnessrl recipe reward-tilt"
        report = build_report(res, out, store_path, command)
    for claim, holds in res["checks"].items():
        console.print(f"  {'[green]yes[/]' if holds else '[red]NO[/]'}  {claim}")
    console.print(f"report: {report}  ({res['timings']['total']:.0f} s; run {res['run_id']})")
