"""`harnessrl recipe agentic-coding`: one epoch of GSPO with a LoRA adapter, pass@1 on external suites before vs after.

Registered on the recipe group by commands/recipe.py (one line); kept in its own file.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from rich.text import Text

from harnessrl.commands.common import (path_arg, console, fail, invoked_command, lm_recipe_config, stage_progress,
                                       user_errors)


def agentic_coding(
    scale: str = typer.Option("small", "--scale", help="small: a few code-v1 tasks, one harness (CPU); paper: rank-32 LoRA, TRL engine, GPU."),
    model: str | None = typer.Option(None, "--model", "-m", help="Model folder, cached id or name (smollm2-135m); default: build a tiny LM here."),
    lora_rank: int | None = typer.Option(None, "--lora-rank", min=1, help="LoRA rank (32 at paper scale)."),
    harness: str | None = typer.Option(None, "--harness", help="Harnesses to warm-start, train and evaluate through, "
                                       "comma-separated (default qwen_code_3turns), e.g. swe_agent or a real program."),
    eval_suites: str | None = typer.Option(None, "--eval-suites", help="External suites, comma-separated: heldout, sealed, "
                                           "terminal-v1 (any other built-in suite); fresh / terminal-bench join with their folder."),
    sealed_suite: Path | None = typer.Option(None, "--sealed-suite", parser=path_arg, help="A folder of tasks written after "
                                             "training began (suite `fresh`; may be added on --resume)."),
    tb_path: Path | None = typer.Option(None, "--tb-path", parser=path_arg, help="A Terminal-Bench / Harbor task folder (suite `terminal-bench`)."),
    config: Path | None = typer.Option(None, "--config", "-c", parser=path_arg, help="YAML/TOML settings applied on the scale's defaults."),
    overrides: list[str] = typer.Option([], "--set", help="Override a setting: KEY=VALUE (repeatable), e.g. --set train_tasks=8."),
    out: Path = typer.Option(Path("runs/agentic-coding"), "--out", "-o", parser=path_arg, help="Model, run, store, seals and report.html."),
    resume: bool = typer.Option(False, "--resume", help="Reuse finished pieces in --out (evaluation-only settings may be added)."),
    engine: str | None = typer.Option(None, "--engine", help="RL trainer: native (default at small scale) | trl (the default at --scale paper)."),
    browser_check: bool = typer.Option(True, "--browser-check/--no-browser-check", help="Open the report in headless Chromium and report what is broken."),
) -> None:
    """One epoch of GSPO with a LoRA adapter over training tasks; pass@1, steps and failure modes on external suites, before vs after."""
    from harnessrl.recipes import agentic_coding as recipe
    from harnessrl.recipes.agentic_coding_report import build_report, tables
    from harnessrl.recipes.agentic_coding_results import write_results

    # folders as JSON strings: --set values are read as YAML, and a path like `a: b` or `[x]` must stay a path
    given = {"model": model, "lora_rank": lora_rank, "engine": engine,
             "sealed_suite": json.dumps(str(sealed_suite)) if sealed_suite else None,
             "tb_path": json.dumps(str(tb_path)) if tb_path else None}
    if harness is not None:
        names = [s.strip() for s in harness.split(",") if s.strip()]
        if not names:
            raise fail("--harness is empty; name at least one harness (swe_agent, terminus, qwen_code, ...)")
        given["harnesses"] = "[" + ",".join(names) + "]"
    if eval_suites is not None:
        names = [s.strip() for s in eval_suites.split(",") if s.strip()]
        if not names:
            raise fail("--eval-suites is empty; name at least one suite (heldout, sealed, terminal-v1, ...)")
        given["eval_suites"] = "[" + ",".join(names) + "]"
    for option, folder in (("--sealed-suite", sealed_suite), ("--tb-path", tb_path)):
        if folder is not None and not folder.is_dir():
            raise fail(f"{option} {folder}: no such folder; give a folder of task folders")
    with user_errors():
        cfg = lm_recipe_config(recipe.AgenticCodingConfig, scale, recipe.preset(scale), config, overrides, out, resume, **given)
        recipe.check(cfg)  # unknown suite, bad folder, a harness that cannot drive a task: fail before any work
        console.print(f"agentic-coding ({cfg.scale}, engine {cfg.engine}): {cfg.train_tasks} training tasks, "
                      f"{'<= ' if cfg.gspo_tasks == 'sometimes' else ''}{cfg.n_updates()} GSPO update(s), LoRA rank {cfg.lora_rank}, suites {', '.join(recipe.suite_names(cfg))} -> {out}")
        t0 = time.perf_counter()
        with stage_progress() as tick:
            res = recipe.run(cfg, out, progress=tick)
        command = invoked_command("harnessrl recipe agentic-coding")
        report = build_report(res, command)
        results = write_results(res, command)
    rates, _ = tables(res)
    for r in rates:
        shown = " -> ".join(f"{k[len('pass@1 '):]} {v}" for k, v in r.items() if k.startswith("pass@1 "))
        console.print(f"  {r['suite']}: pass@1 {shown} (change {r['change']})", highlight=False)
    console.print(f"report: {report}  results: {results}  ({time.perf_counter() - t0:.0f} s)")
    if browser_check:
        from harnessrl.report.browser import BrowserError, check_report

        try:
            check = check_report(report)
            console.print(f"browser check: {check.summary()}")
            if not check.ok:
                raise fail(f"the report does not render cleanly in headless Chromium: {'; '.join(check.problems())}", code=1)
        except BrowserError as err:
            console.print(Text(f"browser check skipped: {err}", style="yellow"))
