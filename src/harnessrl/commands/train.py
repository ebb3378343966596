"""`harnessrl train agent`: RL for an LM through harnesses (train/agent.py), resumable after a kill."""

from __future__ import annotations

from pathlib import Path

import typer

from harnessrl.commands.common import console, user_errors

app = typer.Typer(help="Train policies.", no_args_is_help=True)


@app.command("agent")
def agent(
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML/TOML AgentTrainConfig (see train/agent.py)."),
    overrides: list[str] = typer.Option([], "--set", help="KEY=VALUE, e.g. --set policy.model=runs/tiny --set grouping=cross"),
    model: str | None = typer.Option(None, "--model", "-m", help="Shortcut for --set policy.model=..."),
    lora_rank: int | None = typer.Option(None, "--lora-rank", min=0, help="Shortcut for --set policy.lora_rank=..."),
    run_dir: Path | None = typer.Option(None, "--run-dir", "-o", help="Checkpoint, metrics table and final adapter."),
    resume: bool = typer.Option(False, "--resume", help="Continue from the run folder's checkpoint (exactly, even after kill -9)."),
    audit: bool = typer.Option(False, "--audit", help="Run `harnessrl audit` on the suite x harnesses first; refuse to train on a suite with a hole."),
) -> None:
    """GRPO / GSPO / RLOO / PPO on multi-turn episodes, Within or Cross grouping, KL to the adapter-disabled model."""
    from harnessrl.config import load_config
    from harnessrl.train.agent import AgentTrainConfig, AgentTrainer
    from harnessrl.train.metrics import live_line

    with user_errors():
        sets = list(overrides) + [f"{k}={v}" for k, v in (("policy.model", model), ("policy.lora_rank", lora_rank),
                                                             ("run_dir", run_dir)) if v is not None]
        cfg = load_config(AgentTrainConfig, config, sets)
        if audit:
            from harnessrl.commands.audit import require_clean_audit

            require_clean_audit(cfg.suite, list(cfg.harnesses), cfg.tasks, Path(cfg.store or Path(cfg.run_dir) / "store"))
        trainer = AgentTrainer(cfg, on_update=lambda row: console.print(live_line(row), highlight=False))
        console.print(f"agent RL: {cfg.objective}, grouping {cfg.grouping}, {len(trainer.harnesses)} harness(es), "
                      f"{len(trainer.tasks)} task(s), {cfg.updates} updates -> {cfg.run_dir}")
        trainer.run(resume=resume)
    console.print(f"metrics: {Path(cfg.run_dir) / 'metrics.csv'}  adapter/weights: {Path(cfg.run_dir) / 'final'}  "
                  f"episodes: {cfg.store or Path(cfg.run_dir) / 'store'}")
