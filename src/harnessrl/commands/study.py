"""`harnessrl study`: the main job — from nothing to a report of what the harness taught the agent.

The study is the harness-teacher recipe (no separate code path): build and warm-start a model, seal
an unseen harness, train the agent in one harness, evaluate it everywhere, decompose every
cross-harness difference, predict which further training gains most, train there, compare.
"""

from __future__ import annotations

from pathlib import Path

import typer

from harnessrl.commands.recipe_harness_teacher import BACKEND, CONFIG, ENGINE, LORA, MODEL, RAY, RESUME, SCALE, SETS, SUITE, WORKERS, run_teacher
from harnessrl.commands.common import path_arg


def study(scale: str = SCALE, model: str | None = MODEL, lora_rank: int | None = LORA, backend: str | None = BACKEND,
          ray_address: str | None = RAY, config: Path | None = CONFIG, overrides: list[str] = SETS,
          out: Path = typer.Option(Path("runs/study"), "--out", "-o", parser=path_arg, help="Models, runs, record store, seal, report.html."),
          resume: bool = RESUME, workers: int | None = WORKERS, engine: str | None = ENGINE,
          suite: str | None = SUITE) -> None:
    """The main job: train a small agent in one harness, evaluate it across harnesses (and a sealed unseen one),
    split every difference into ceiling and mismatch, train further where the predicted gain is highest, and
    write report.html. Ctrl-C keeps a resumable study; --resume continues it."""
    run_teacher(scale, model, lora_rank, backend, ray_address, config, overrides, out, resume, workers,
                "harnessrl study: what the training harness taught the agent", "study", engine, suite)
