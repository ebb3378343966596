"""`harnessrl recipe <name>`: one small-scale reproduction per seed paper, each a thin command here.

Every recipe command takes --scale (small | paper), --config FILE, --set key=value overrides,
--out DIR, --store DIR and --resume, and ends by printing where its HTML report is.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import typer

from harnessrl.commands.common import StoreOption, console, default_store, progress, user_errors

app = typer.Typer(help="Reproduce the seed papers at small scale (or --scale paper on a bigger machine).",
                  no_args_is_help=True)

ScaleOption = typer.Option("small", "--scale", help="small: minutes on a laptop CPU; paper: the full protocol.")
ConfigOption = typer.Option(None, "--config", "-c", help="YAML/TOML file with settings (applied on the scale's defaults).")
SetOption = typer.Option([], "--set", help="Override a setting: KEY=VALUE (repeatable), e.g. --set seeds=[0,1].")
ResumeOption = typer.Option(False, "--resume", help="Continue the runs in --out from their checkpoints.")


@app.command("bipa")
def bipa(
    policy: str | None = typer.Option(None, "--policy", "-p", help="Policy spec (default: the probe with known ground truth)."),
    config: Path | None = ConfigOption,
    overrides: list[str] = SetOption,
    out: Path | None = typer.Option(None, "--out", "-o", help="Folder for the store, optimizer run, audit and report.html."),
    workers: int | None = typer.Option(None, "--workers", "-j", min=1, help="Audit rollouts in a process pool of this size."),
) -> None:
    """Audit a skill optimizer with BiPA end to end on the built-in coding suite."""
    from harnessrl.commands.bipa import _print_audit
    from harnessrl.config import load_config
    from harnessrl.recipes.bipa import BipaRecipeConfig, run

    with user_errors():
        sets = list(overrides) + [f"{k}={v}" for k, v in (("policy", policy), ("out", out), ("workers", workers)) if v]
        cfg = load_config(BipaRecipeConfig, config, sets)
        with progress() as bar:
            tasks: dict[str, int] = {}

            def on_progress(stage: str, i: int, n: int | None) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=n)
                bar.update(tasks[stage], completed=i, total=n)

            res = run(cfg, progress=on_progress)

    class _Result:  # the fields _print_audit reads
        summary, principles = res["summary"], res["principles"]
        run_id = res["run_id"]

    _print_audit(_Result, res["report"])
    console.print(f"({res['runtime_s']:.0f} s)")


@app.command("conditioned-critic")
def conditioned_critic(
    scale: str = ScaleOption,
    config: Path | None = ConfigOption,
    overrides: list[str] = SetOption,
    out: Path = typer.Option(Path("runs/conditioned-critic"), "--out", "-o", help="Run folders, figures and report.html."),
    store: Path | None = StoreOption,
    resume: bool = ResumeOption,
    workers: int | None = typer.Option(None, "--workers", "-j", min=1, help="Parallel training processes."),
) -> None:
    """Shared vs conditioned vs multihead critic in multi-context PPO (bandit, CartPole variants, MiniGrid levels)."""
    from harnessrl.config import load_config
    from harnessrl.records import RecordStore
    from harnessrl.recipes import conditioned_critic as recipe
    from harnessrl.recipes.conditioned_critic_report import build_report, store_episodes

    with user_errors():
        sets = list(overrides) + ([f"workers={workers}"] if workers else [])
        cfg = load_config(recipe.ConditionedCriticConfig, config, sets, base=recipe.preset(scale))
        jobs = recipe.jobs(cfg)
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
        command = "harnessrl " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else \
            "harnessrl recipe conditioned-critic"
        report = build_report(cfg, results, out, store_path, command, wall)
    console.print(f"{written} evaluation episodes -> {store_path}")
    console.print(f"report: {report}  ({wall:.0f} s)")
