"""Per-update training metrics: a table in the run folder (CSV + Parquet), a live rich view,
and optional TensorBoard / Weights & Biases sinks (off by default; W&B only in offline mode).

The table is rewritten whole from the rows held in memory (and in the checkpoint), so after
a resume it holds exactly one row per completed update.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from harnessrl.config import ConfigError
from harnessrl.fileio import atomic_write

def episode_columns(episodes: list[Any]) -> dict[str, Any]:
    """The episode columns of an update's metrics row (either engine): how many, mean reward,
    solve rate, turns and format errors per episode."""
    return {"episodes": len(episodes), "reward_mean": float(np.mean([e.reward for e in episodes])),
            "solve_rate": float(np.mean([e.success for e in episodes])),
            "turns_mean": float(np.mean([e.num_turns for e in episodes])),
            "format_errors": float(np.mean([e.format_errors for e in episodes]))}


def harness_columns(episodes: list[Any], harness_ids: list[str]) -> dict[str, float]:
    """reward/<harness> and solve/<harness> for each harness with episodes in this update."""
    row: dict[str, float] = {}
    for h in harness_ids:
        mine = [e for e in episodes if e.context.harness_id == h]
        if mine:
            row[f"reward/{h}"] = float(np.mean([e.reward for e in mine]))
            row[f"solve/{h}"] = float(np.mean([e.success for e in mine]))
    return row


#: Columns that measure the machine, not the run: they differ between identical runs.
TIMING_COLUMNS = ("time_rollout_s", "time_update_s", "gen_tok_s", "train_tok_s", "wall_s")


class MetricsTable:
    def __init__(self, run_dir: str | Path, rows: list[dict[str, Any]] | None = None,
                 tensorboard: bool = False, wandb: bool = False, run_name: str = ""):
        self.dir = Path(run_dir)
        self.rows: list[dict[str, Any]] = list(rows or [])
        self.tb = self.wb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise ConfigError("tensorboard=true needs the tensorboard package: pip install 'harnessrl[tracking]'") from None
            self.tb = SummaryWriter(str(self.dir / "tensorboard"))
        if wandb:
            try:
                import wandb as wb
            except ImportError:
                raise ConfigError("wandb=true needs the wandb package: pip install 'harnessrl[tracking]'") from None
            os.environ.setdefault("WANDB_MODE", "offline")  # never contact a server unless the user asks
            self.wb = wb.init(project="harnessrl", name=run_name or self.dir.name, dir=str(self.dir), mode=os.environ["WANDB_MODE"])

    def log(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        self.write()
        step = int(row.get("update", len(self.rows)))
        scalars = {k: float(v) for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
                   and math.isfinite(float(v))}
        if self.tb is not None:
            for k, v in scalars.items():
                self.tb.add_scalar(k, v, step)
            self.tb.flush()
        if self.wb is not None:
            self.wb.log(scalars, step=step)

    def table(self) -> pa.Table:
        cols: dict[str, None] = {}
        for r in self.rows:
            cols.update(dict.fromkeys(r))
        return pa.table({c: [r.get(c) for r in self.rows] for c in cols})

    def write(self) -> None:
        if not self.rows:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        t = self.table()
        for name, writer in (("metrics.parquet", pq.write_table), ("metrics.csv", pacsv.write_csv)):
            atomic_write(self.dir / name, lambda f, writer=writer: writer(t, f))

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()
        if self.wb is not None:
            self.wb.finish()


def live_line(row: dict[str, Any]) -> str:
    """One rich-markup line per update for the console."""
    parts = [f"[bold]update {row['update']}[/]",
             f"reward {row['reward_mean']:.3f}", f"solve {row['solve_rate']:.3f}",
             f"signal {row['signal_fraction']:.2f}", f"kl {row.get('kl', 0.0):.4f}",
             f"ent {row.get('entropy', 0.0):.3f}", f"clip {row.get('clipfrac', 0.0):.3f}",
             f"gen {row.get('gen_tok_s', 0.0):.0f} tok/s", f"train {row.get('train_tok_s', 0.0):.0f} tok/s"]
    per = [f"{k.split('/', 1)[1]} {v:.2f}" for k, v in row.items() if k.startswith("solve/")]
    return "  ".join(parts) + ("  [dim](" + ", ".join(per) + ")[/]" if per else "")
