"""`harnessrl train agent`: RL for an LM through harnesses (train/agent.py), resumable after a kill."""

from __future__ import annotations

from pathlib import Path

import typer

from harnessrl.commands.common import path_arg, check_store_writable, check_writable_dir, console, user_errors
from harnessrl.config import ConfigError

app = typer.Typer(help="Train policies.", no_args_is_help=True)


@app.command("agent")
def agent(
    config: Path | None = typer.Option(None, "--config", "-c", parser=path_arg, help="YAML/TOML AgentTrainConfig (see train/agent.py)."),
    overrides: list[str] = typer.Option([], "--set", help="KEY=VALUE, e.g. --set policy.model=runs/tiny --set grouping=cross"),
    model: str | None = typer.Option(None, "--model", "-m", help="Shortcut for --set policy.model=..."),
    lora_rank: int | None = typer.Option(None, "--lora-rank", min=0, help="Shortcut for --set policy.lora_rank=..."),
    run_dir: Path | None = typer.Option(None, "--out", "-o", "--run-dir", parser=path_arg,
                                        help="Run folder: checkpoint, metrics table and final adapter (--run-dir: the same)."),
    resume: bool = typer.Option(False, "--resume", help="Continue from the run folder's checkpoint (exactly, even after kill -9)."),
    engine: str = typer.Option("native", "--engine", help="native (this process) | trl (TRL GRPOTrainer: accelerate, "
                               "DeepSpeed/FSDP, vLLM; many processes: accelerate launch -m harnessrl.engines.trl)."),
    audit: bool = typer.Option(False, "--audit", help="Run `harnessrl audit` on the suite x harnesses first; refuse to train on a suite with a hole."),
) -> None:
    """GRPO / GSPO / RLOO / PPO on multi-turn episodes, Within or Cross grouping, KL to the adapter-disabled model."""
    from harnessrl.train.agent import AgentTrainConfig, AgentTrainer
    from harnessrl.train.metrics import live_line

    if engine not in ("native", "trl"):
        with user_errors():
            raise ConfigError(f"--engine {engine!r}: choose native or trl")
    if engine == "trl":
        return _trl(config, overrides, model, lora_rank, run_dir, resume, audit)
    with user_errors():
        cfg = _checked_config(AgentTrainConfig, config, overrides, model, lora_rank, run_dir, audit)
        trainer = AgentTrainer(cfg, on_update=lambda row: console.print(live_line(row), highlight=False, markup=True))
        console.print(f"agent RL: {cfg.objective}, grouping {cfg.grouping}, {len(trainer.harnesses)} harness(es), "
                      f"{len(trainer.tasks)} task(s), {cfg.updates} updates -> {cfg.run_dir}")
        trainer.run(resume=resume)
    _print_outputs(cfg)


def _trl(config: Path | None, overrides: list[str], model: str | None, lora_rank: int | None, run_dir: Path | None,
         resume: bool, audit: bool) -> None:
    """The same run file inside TRL's GRPOTrainer, in this process (engines/trl.py)."""
    from harnessrl.engines.trl import TRLEngine
    from harnessrl.engines.trl_config import TRLRunConfig

    with user_errors():
        cfg = _checked_config(TRLRunConfig, config, overrides, model, lora_rank, run_dir, audit)
        _check_trl_installed(cfg)
        trainer = TRLEngine(cfg)
        for note in trainer.plan.notes:
            console.print(f"note: {note}", highlight=False)
        console.print(f"agent RL (engine trl): {cfg.objective}, grouping {cfg.grouping}, {len(trainer.harnesses)} "
                      f"harness(es), {len(trainer.tasks)} task(s), {cfg.updates} updates -> {cfg.run_dir}")
        trainer.run(resume=resume)
    _print_outputs(cfg)


def _check_trl_installed(cfg) -> None:
    """The engine's optional libraries, named before any work (TRL and vLLM are extras, not dependencies)."""
    import importlib.util

    try:
        import trl  # noqa: F401
    except ImportError:
        raise ConfigError("--engine trl needs TRL: pip install 'harnessrl[trl]' (or use --engine native)") from None
    if cfg.trl.use_vllm and importlib.util.find_spec("vllm") is None:
        raise ConfigError("trl.use_vllm=true needs vLLM (Linux, a CUDA GPU): pip install 'harnessrl[vllm]', "
                          "or --set trl.use_vllm=false")


def _sets(overrides: list[str], model: str | None, lora_rank: int | None, run_dir: Path | None) -> list[str]:
    """--set values plus the shortcut options, in the order load_config applies them (shortcuts win)."""
    return list(overrides) + [f"{k}={v}" for k, v in (("policy.model", model), ("policy.lora_rank", lora_rank),
                                                        ("run_dir", run_dir)) if v is not None]


def _require_clean_audit(cfg) -> None:
    """--audit: run the grader audit on the run's suite x harnesses; a suite with a hole is refused (exit 1)."""
    from harnessrl.commands.audit import require_clean_audit

    require_clean_audit(cfg.suite, list(cfg.harnesses), cfg.tasks, Path(cfg.store or Path(cfg.run_dir) / "store"),
                        out=Path(cfg.run_dir) / "audit")


def _checked_config(cls: type, config: Path | None, overrides: list[str], model: str | None, lora_rank: int | None,
                    run_dir: Path | None, audit: bool):
    """The run file plus options, with its folders checked writable (and the suite audited) before any work."""
    from harnessrl.config import load_config

    cfg = load_config(cls, config, _sets(overrides, model, lora_rank, run_dir))
    from harnessrl.rewards import check as check_rewards

    check_rewards(cfg.reward_hook)  # every reward function imports, before any rollout
    check_writable_dir(Path(cfg.run_dir), "--out")
    if cfg.store:
        check_store_writable(Path(cfg.store), "store")
    if audit:
        _require_clean_audit(cfg)
    return cfg


def _print_outputs(cfg) -> None:
    console.print(f"metrics: {Path(cfg.run_dir) / 'metrics.csv'}  adapter/weights: {Path(cfg.run_dir) / 'final'}  "
                  f"episodes: {cfg.store or Path(cfg.run_dir) / 'store'}")
