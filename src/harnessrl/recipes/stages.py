"""Stage bookkeeping shared by the recipes: each finished stage leaves a file in OUT/stages/,
and a resumed run reuses it instead of recomputing.

A stage file is written with harnessrl.fileio.atomic_write (a temporary name unique to the
writer, fsync, rename), so a run killed mid-write leaves either the whole file or none. `check_same_config` refuses to resume a folder that holds a
run with other settings, naming the fields that differ.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harnessrl import interrupts
from harnessrl.config import Config, ConfigError, changed_settings
from harnessrl.fileio import atomic_write

# settings that change where or how fast the work runs, not its results
RUNTIME_ONLY = {"workers", "backend", "ray_address", "device", "threads", "report_to"}  # report_to: where metrics go


def json_stage(out: Path, name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """fn()'s JSON-able result, computed once: OUT/stages/NAME.json (with the seconds it took)."""
    path = out / "stages" / f"{name}.json"
    if path.exists():
        return json.loads(path.read_text())
    interrupts.check()  # a Ctrl-C a finaliser swallowed still stops the run here, before the next stage
    t0 = time.perf_counter()
    result = fn()
    result["seconds"] = time.perf_counter() - t0
    atomic_write(path, lambda f: f.write(json.dumps(result, default=float).encode("utf-8")))
    interrupts.check()
    return result


def torch_stage(out: Path, name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """fn()'s result (tensors, state dicts, numpy arrays), computed once: OUT/stages/NAME.pt."""
    path = out / "stages" / f"{name}.pt"
    if path.exists():
        return torch.load(path, weights_only=False)  # our own file, written below
    interrupts.check()
    result = fn()
    atomic_write(path, lambda f: torch.save(result, f))
    return result


def check_same_config(cfg: Config, path: Path) -> None:
    """Resuming with other settings would mix two runs in one folder: refuse, naming the fields."""
    if not path.exists():
        return
    diff = [f"{k}: {a!r} -> {b!r}" for k, a, b in changed_settings(cfg, json.loads(path.read_text()), RUNTIME_ONLY)]
    if diff:
        raise ConfigError(f"{path.parent} holds a run with other settings ({'; '.join(diff)}); resume it with the same "
                          "settings or choose another output folder")
