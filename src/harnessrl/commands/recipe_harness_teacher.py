"""`harnessrl recipe harness-teacher` (and, with the study's title, `harnessrl study`).

Registered on the recipe group by commands/recipe.py (one line); kept in its own file.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import typer
from rich.text import Text

from harnessrl.commands.common import path_arg, console, invoked_command, lm_recipe_config, stage_progress, user_errors

SCALE = typer.Option("small", "--scale", help="small: tiny LM on the lookup suite (CPU, minutes); miniwob: tiny LM on 6 "
                     "MiniWoB++ tasks through 6 harness variants (CPU, <= 45 min); paper: terminal tasks through the "
                     "coding harnesses, a real model on a GPU (needs --model).")
SUITE = typer.Option(None, "--suite", help="miniwob: the same as --scale miniwob (the MiniWoB++ study); any other "
                     "suite is --set suite=NAME on the scale's defaults.")
MODEL = typer.Option(None, "--model", "-m", help="Model folder or cached id (default: build a tiny LM here).")
LORA = typer.Option(None, "--lora-rank", min=0, help="LoRA rank for SFT and RL (0 = full fine-tuning; paper scale: 32).")
BACKEND = typer.Option(None, "--backend", help="local | ray: where evaluation rollouts run (RL generation stays local).")
CONFIG = typer.Option(None, "--config", "-c", parser=path_arg, help="YAML/TOML settings applied on the scale's defaults.")
SETS = typer.Option([], "--set", help="Override a setting: KEY=VALUE (repeatable), e.g. --set agent_updates=32.")
RESUME = typer.Option(False, "--resume", help="Continue the study in --out: finished stages are reused, RL resumes from "
                      "its last checkpoint.")
RAY = typer.Option(None, "--ray-address", help="With --backend ray: an existing cluster's address (default: a local Ray, "
                   "which must run in a loopback-only network namespace).")
WORKERS = typer.Option(None, "--workers", "-j", min=1, help="Parallel rollout workers and RL rounds (default 2 on CPU).")
ENGINE = typer.Option(None, "--engine", help="RL trainer: native (default at small scale) | trl (TRL GRPOTrainer; the "
                      "default at --scale paper; many GPUs: see docs/scale.md).")


def run_teacher(scale: str, model: str | None, lora_rank: int | None, backend: str | None, ray_address: str | None, config: Path | None,
                overrides: list[str], out: Path, resume: bool, workers: int | None, title: str, name: str,
                engine: str | None = None, suite: str | None = None) -> None:
    from harnessrl.recipes import harness_teacher as recipe
    from harnessrl.recipes.harness_teacher_report import build_report, summary_lines, write_headline

    with user_errors():
        if suite == "miniwob" and scale in ("small", "miniwob"):
            scale = "miniwob"  # the MiniWoB++ study is a preset: its tasks, harness variants and budget go together
        elif suite:
            overrides = [*overrides, f"suite={suite}"]
        cfg = lm_recipe_config(recipe.HarnessTeacherConfig, scale, recipe.preset(scale), config, overrides, out, resume,
                               model=model, lora_rank=lora_rank, backend=backend, ray_address=ray_address, workers=workers,
                               engine=engine)
        console.print(f"{name} ({cfg.scale}, engine {cfg.engine}): train in {cfg.train_harness}, evaluate in {len(cfg.harnesses)} harnesses + "
                      f"sealed {cfg.sealed_harness}, {cfg.workers} worker(s) -> {out}", highlight=False)
        t0 = time.perf_counter()
        try:
            with stage_progress() as tick:
                res = recipe.run(cfg, out, progress=tick)
        except KeyboardInterrupt:
            again = " ".join(shlex.quote(a) for a in sys.argv[1:] if a != "--resume")
            console.print(Text(f"\ninterrupted; finished stages and RL checkpoints are kept in {out}.", style="yellow"),
                          f"Continue with:\n  harnessrl {again} --resume", highlight=False)
            raise typer.Exit(130) from None
        command = invoked_command(f"harnessrl {name}")
        report = build_report(res, command, title=title)
        write_headline(res, command)
    for line in summary_lines(res):
        console.print("  " + line, highlight=False)
    console.print(f"report: {report}  ({time.perf_counter() - t0:.0f} s)")


def harness_teacher(scale: str = SCALE, model: str | None = MODEL, lora_rank: int | None = LORA, backend: str | None = BACKEND,
                    ray_address: str | None = RAY, config: Path | None = CONFIG, overrides: list[str] = SETS,
                    out: Path = typer.Option(Path("runs/harness-teacher"), "--out", "-o", parser=path_arg, help="Models, runs, store, seal, report.html."),
                    resume: bool = RESUME, workers: int | None = WORKERS, engine: str | None = ENGINE,
                    suite: str | None = SUITE) -> None:
    """Train in one harness, evaluate in all (+ a sealed one), split differences into ceiling and mismatch,
    train further where the predicted gain is highest and compare predicted with observed gain."""
    run_teacher(scale, model, lora_rank, backend, ray_address, config, overrides, out, resume, workers,
                "harness-teacher: what the training harness taught the agent", "recipe harness-teacher", engine, suite)
