"""`harnessrl recipe reward-tilt`: the drawer experiment of the tilt paper (registered in commands/recipe.py)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import typer
from rich.markup import escape
from rich.text import Text

from harnessrl.commands.common import (
    path_arg, StoreOption, check_store_writable, check_writable_dir, console, default_store, fail, stage_progress, user_errors,
)


def reward_tilt(
    scale: str = typer.Option("small", "--scale", help="small: minutes on a laptop CPU; paper: more demos, samples, rounds, seeds."),
    task: str = typer.Option("drawer", "--task", help="drawer (built in) or metaworld-drawer (Meta-World's Sawyer scene; needs `make metaworld` and .venv-metaworld/bin/harnessrl)."),
    config: Path | None = typer.Option(None, "--config", "-c", parser=path_arg, help="YAML/TOML file with settings (applied on the scale's defaults)."),
    overrides: list[str] = typer.Option([], "--set", help="Override a setting: KEY=VALUE (repeatable), e.g. --set finetune.rounds=3."),
    out: Path = typer.Option(Path("runs/reward-tilt"), "--out", "-o", parser=path_arg, help="Folder for report.html, its figures and the finished stages."),
    store: Path | None = StoreOption,
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out: finished stages are reused, episodes already in the store are kept."),
) -> None:
    """Learned visual reward vs outcome verifier on a drawer task: tilt-model predictions next to observed outcomes."""
    from harnessrl.config import load_config
    from harnessrl.records import RecordStore
    from harnessrl.recipes import reward_tilt as recipe
    from harnessrl.recipes.reward_tilt_report import build_report

    with user_errors():
        cfg = load_config(recipe.RewardTiltConfig, config, overrides, base=recipe.preset(scale, task))
        check_writable_dir(out, "--out")
        store_path = store or default_store()
        check_store_writable(store_path)
        if (out / "stages").is_dir() and any((out / "stages").iterdir()) and not resume:
            raise fail(f"{out} holds a reward-tilt run; pass --resume to continue it, or choose another --out")
        console.print(f"reward-tilt ({cfg.scale}, {cfg.task}): store {store_path}, report -> {out}")
        try:
            with stage_progress() as on_progress:
                res = recipe.run(cfg, RecordStore(store_path), on_progress, out=out)
        except KeyboardInterrupt:
            again = " ".join(shlex.quote(a) for a in sys.argv[1:] if a != "--resume")
            console.print(Text(f"\ninterrupted; finished stages are kept in {out / 'stages'}.", style="yellow"),
                          f"Continue with:\n  harnessrl {again} --resume", highlight=False)
            raise typer.Exit(130) from None
        args = [a for a in sys.argv[1:] if a != "--resume"]
        command = "harnessrl " + " ".join(shlex.quote(a) for a in args) if args else "harnessrl recipe reward-tilt"
        report = build_report(res, out, store_path, command)
    for claim, holds in res["checks"].items():
        console.print(f"  {'[green]yes[/]' if holds else '[red]NO[/]'}  {escape(str(claim))}", markup=True)
    console.print(f"report: {report}  ({res['timings']['total']:.0f} s of stages, {res['timings']['this call']:.0f} s in this call; run {res['run_id']})")
