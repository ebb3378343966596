"""`harnessrl recipe multi-harness`: Within vs Cross grouping in multi-harness RL, sealed unseen harness.

Registered on the recipe group by commands/recipe.py (one line); kept in its own file.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from harnessrl.commands.common import (path_arg, console, fail, invoked_command, lm_recipe_config, stage_progress,
                                       user_errors)


def check_rules(rules: list[str]) -> None:
    """Every grouping rule is a registered one: a typo fails here, not after SFT and minutes of RL."""
    from harnessrl.rl.advantages import GROUPING_RULES

    bad = [r for r in rules if r not in GROUPING_RULES]
    if bad or not rules:
        raise fail(f"invalid config: rules = {rules!r}: " + (f"unknown grouping rule(s) {bad}; " if bad else "empty; ")
                   + f"choose from {', '.join(GROUPING_RULES.names())}")


def multi_harness(
    scale: str = typer.Option("small", "--scale", help="small: tiny LM on the lookup suite (CPU); paper: coding harnesses, GPU; "
                              "real-programs: the real agent programs (mini-swe-agent, aider-cli, qwen-code-cli-8k; "
                              "openhands-cli-8k sealed), tiny LM, CPU."),
    model: str | None = typer.Option(None, "--model", "-m", help="Model path or cached id (default: build a tiny LM here)."),
    lora_rank: int | None = typer.Option(None, "--lora-rank", min=0, help="LoRA rank (0 = full fine-tuning)."),
    config: Path | None = typer.Option(None, "--config", "-c", parser=path_arg, help="YAML/TOML settings applied on the scale's defaults."),
    overrides: list[str] = typer.Option([], "--set", help="Override a setting: KEY=VALUE (repeatable), e.g. --set seeds=[0,1]."),
    out: Path = typer.Option(Path("runs/multi-harness"), "--out", "-o", parser=path_arg, help="Model, runs, store, seal and report.html."),
    resume: bool = typer.Option(False, "--resume", help="Reuse finished pieces in --out and continue unfinished runs."),
    workers: int | None = typer.Option(None, "--workers", "-j", min=1, help="Parallel RL runs (default 2 on CPU, 1 on GPU)."),
    engine: str | None = typer.Option(None, "--engine", help="RL trainer: native (default at small scale) | trl (TRL "
                                      "GRPOTrainer; the default at --scale paper; many GPUs: see docs/scale.md)."),
    warm_start: Path | None = typer.Option(None, "--warm-start", parser=path_arg, help="Start from this warm start instead "
                                           "of SFT here: a merged model folder (e.g. agentic-coding's OUT/sft) or a LoRA "
                                           "adapter folder on --model."),
    audit: bool = typer.Option(False, "--audit", help="Audit the suite's grader under the training harnesses first; refuse a suite with a hole (code/terminal suites)."),
) -> None:
    """Tiny LM: SFT on one harness, RL over several with Within vs Cross groups, evaluation on a sealed unseen harness."""
    from harnessrl.recipes import multi_harness as recipe
    from harnessrl.recipes.multi_harness_report import build_report

    with user_errors():
        if warm_start is not None:
            overrides = [*overrides, f"warm_start_model={json.dumps(str(warm_start))}"]
        cfg = lm_recipe_config(recipe.MultiHarnessConfig, scale, recipe.preset(scale), config, overrides, out, resume,
                               model=model, lora_rank=lora_rank, workers=workers, engine=engine)
        check_rules(cfg.rules)
        if audit:
            from harnessrl.commands.audit import require_clean_audit

            require_clean_audit(cfg.suite, list(cfg.train_harnesses), None, None)  # default store: --out stays untouched
        console.print(f"multi-harness ({cfg.scale}, engine {cfg.engine}): {len(cfg.rules)} rules x {len(cfg.seeds)} seeds x {cfg.updates} updates, "
                      f"{cfg.workers} worker(s) -> {out}")
        t0 = time.perf_counter()
        with stage_progress() as tick:
            res = recipe.run(cfg, out, progress=tick)
        command = invoked_command("harnessrl recipe multi-harness")
        report = build_report(res, command)
    console.print(f"report: {report}  ({time.perf_counter() - t0:.0f} s)")
