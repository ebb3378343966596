"""Crash-safe training checkpoints: trainable weights, optimizer, scheduler, RNG states, counters.

A checkpoint is one file written atomically (temp file, fsync, rename, fsync of the folder),
so a run killed at any instruction (kill -9 included) leaves either the previous checkpoint
or the new one, never a torn file. Resuming restores every source of randomness, so a
resumed run continues exactly as the uninterrupted one would have.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harnessrl.config import Config, ConfigError, changed_settings
from harnessrl.fileio import atomic_write

CHECKPOINT = "checkpoint.pt"
#: settings a resumed run may change: how far it trains and where it logs
RESUMABLE = ("updates", "report_to", "tensorboard", "wandb")  # where metrics go, not what is trained


def check_same_config(cfg: Config, saved: dict[str, Any], run_dir: str | Path) -> None:
    """Refuse to resume `run_dir` when `cfg` differs from `saved`, the config the run was started with
    (both engines: the native checkpoint's and the TRL run's). A setting added since that run counts
    as its default there (config.changed_settings), so it blocks the resume only when set otherwise."""
    changed = changed_settings(cfg, saved, ignore=RESUMABLE)
    if changed:
        names = sorted(dict.fromkeys(k.split(".")[0] for k, _, _ in changed))
        raise ConfigError(f"{run_dir}: the checkpoint was written with a different config ({', '.join(names)}); "
                          "resume with the same settings or start a new run_dir")


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The parameters being trained (the LoRA weights, or all weights without LoRA), on CPU."""
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


def load_trainable_state(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    params = dict(model.named_parameters())
    missing = [n for n, p in params.items() if p.requires_grad and n not in state]
    unknown = [n for n in state if n not in params]
    if missing or unknown:
        raise ValueError(f"checkpoint does not match the model: missing {missing[:3]}, unknown {unknown[:3]}; "
                         "was it written with the same model and LoRA settings?")
    with torch.no_grad():
        for n, t in state.items():
            params[n].copy_(t.to(params[n].device, params[n].dtype))


def save_checkpoint(run_dir: str | Path, state: dict[str, Any]) -> Path:
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    # a temporary name unique to this writer: two processes saving the same run never share one
    return atomic_write(run_dir / CHECKPOINT, lambda f: torch.save(state, f))


def load_checkpoint(run_dir: str | Path) -> dict[str, Any] | None:
    path = Path(run_dir) / CHECKPOINT
    if not path.exists():
        return None
    return torch.load(path, map_location="cpu", weights_only=False)
