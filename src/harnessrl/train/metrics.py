"""Per-update training metrics: a table in the run folder (CSV + Parquet), a live rich view,
and the trackers of `report_to` (TRL's names: tensorboard, wandb, trackio, mlflow; none by default, all offline).

The table is rewritten whole from the rows held in memory (and in the checkpoint), so after
a resume it holds exactly one row per completed update.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from pydantic import BeforeValidator

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


#: TRL's `report_to` names harnessrl logs to (beside metrics.csv/.parquet, which are always written)
TRACKERS = ("tensorboard", "wandb", "trackio", "mlflow")


def normalize_report_to(data: Any) -> Any:
    """A config's `report_to` as TRL takes it: a list of tracker names, "all", "none" or one name; the old
    `tensorboard: true` / `wandb: true` booleans add their tracker (they still work, as aliases)."""
    if not isinstance(data, dict):
        return data
    names = report_to_names(data.get("report_to", []))
    if not isinstance(names, list):
        return data
    for flag in ("tensorboard", "wandb"):
        if data.get(flag) is True and flag not in names:
            names.append(flag)
    return {**data, "report_to": names}


def report_to_names(value: Any) -> Any:
    """One `report_to` value as TRL takes it ("all", "none", one name or a list) -> a list of tracker names."""
    if value is None:
        return []
    names = [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else value
    if not isinstance(names, list):
        return names  # pydantic names the type error
    return list(TRACKERS) if names == ["all"] else [n for n in names if n != "none"]


#: the `report_to` field of every training config and recipe
ReportTo = Annotated[list[Literal["tensorboard", "wandb", "trackio", "mlflow"]], BeforeValidator(report_to_names)]
REPORT_TO_HELP = ("Trackers the per-update metrics also go to, by TRL's names: tensorboard (<run>/tensorboard), trackio "
                  "(a local store, <run>/trackio unless TRACKIO_DIR), mlflow (<run>/mlruns unless MLFLOW_TRACKING_URI), "
                  "wandb (offline unless WANDB_MODE); 'all' or 'none' as in TRL.")


def share_trackio_store(out_dir: str | Path, report_to: list[str] | tuple[str, ...]) -> None:
    """A recipe's runs (in this process and in its workers, which inherit the environment) log to one trackio store,
    out_dir/trackio, unless TRACKIO_DIR names another: trackio reads it once, when first imported."""
    if "trackio" in report_to:
        os.environ.setdefault("TRACKIO_DIR", str((Path(out_dir) / "trackio").absolute()))


def _need(module: str, tracker: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        extra = "wandb" if tracker == "wandb" else "tracking"
        raise ConfigError(f"report_to {tracker} needs the {tracker} package: pip install 'harnessrl[{extra}]'") from None


class Trackers:
    """The trackers of `report_to`, all offline by default: tensorboard -> run_dir/tensorboard; wandb -> offline mode
    unless WANDB_MODE says otherwise; trackio -> its local store in run_dir/trackio unless TRACKIO_DIR is set; mlflow
    -> run_dir/mlruns unless MLFLOW_TRACKING_URI is set. Every trainer and recipe logs its per-update scalars here."""

    def __init__(self, run_dir: str | Path, report_to: list[str] | tuple[str, ...] = (), run_name: str = "",
                 config: dict[str, Any] | None = None):
        self.dir = Path(run_dir)
        self.tb = self.wb = self.trackio = self.mlflow = None
        name = run_name or self.dir.name
        unknown = [t for t in report_to if t not in TRACKERS]
        if unknown:
            raise ConfigError(f"report_to {unknown}: unknown tracker; choose from {', '.join(TRACKERS)}")
        if "tensorboard" in report_to:
            _need("tensorboard", "tensorboard")
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(str(self.dir / "tensorboard"))
        if "wandb" in report_to:
            wb = _need("wandb", "wandb")
            os.environ.setdefault("WANDB_MODE", "offline")  # never contact a server unless the user asks
            self.wb = wb.init(project="harnessrl", name=name, dir=str(self.dir), mode=os.environ["WANDB_MODE"], config=config)
        if "trackio" in report_to:
            # trackio reads TRACKIO_DIR when it is first imported: one process, one local store (the first run's)
            os.environ.setdefault("TRACKIO_DIR", str((self.dir / "trackio").absolute()))
            self.trackio = _need("trackio", "trackio")
            self.trackio.init(project="harnessrl", name=name, config=config, resume="allow")
        if "mlflow" in report_to:
            self.mlflow = _need("mlflow", "mlflow")
            if not os.environ.get("MLFLOW_TRACKING_URI"):
                # a local folder (mlflow-skinny has no SQL backend); MLflow 3 asks for this opt-in to use one
                os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
                self.mlflow.set_tracking_uri((self.dir / "mlruns").absolute().as_uri())
            self.mlflow.start_run(run_name=name)
            if config:
                self.mlflow.log_params({k: str(v)[:250] for k, v in config.items()})

    @property
    def active(self) -> bool:
        return any(t is not None for t in (self.tb, self.wb, self.trackio, self.mlflow))

    def log(self, row: dict[str, Any], step: int) -> None:
        """The finite numbers of `row` at `step` (strings, booleans and NaN are left to metrics.csv)."""
        if not self.active:
            return
        scalars = {k: float(v) for k, v in row.items() if isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
                   and math.isfinite(float(v))}
        if self.tb is not None:
            for k, v in scalars.items():
                self.tb.add_scalar(k, v, step)
            self.tb.flush()
        if self.wb is not None:
            self.wb.log(scalars, step=step)
        if self.trackio is not None:
            self.trackio.log(scalars, step=step)
        if self.mlflow is not None:
            self.mlflow.log_metrics(scalars, step=step)

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()
        if self.wb is not None:
            self.wb.finish()
        if self.trackio is not None:
            self.trackio.finish()
        if self.mlflow is not None:
            self.mlflow.end_run()
        self.tb = self.wb = self.trackio = self.mlflow = None

    def __enter__(self) -> "Trackers":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class MetricsTable:
    """metrics.csv / metrics.parquet in the run folder, and each tracker of `report_to` (see Trackers)."""

    def __init__(self, run_dir: str | Path, rows: list[dict[str, Any]] | None = None,
                 report_to: list[str] | tuple[str, ...] = (), run_name: str = "", config: dict[str, Any] | None = None):
        self.dir = Path(run_dir)
        self.rows: list[dict[str, Any]] = list(rows or [])
        self.trackers = Trackers(run_dir, report_to, run_name, config)

    def log(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        self.write()
        self.trackers.log(row, int(row.get("update", len(self.rows))))

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
        self.trackers.close()


def live_line(row: dict[str, Any]) -> str:
    """One rich-markup line per update for the console."""
    parts = [f"[bold]update {row['update']}[/]",
             f"reward {row['reward_mean']:.3f}", f"solve {row['solve_rate']:.3f}",
             f"signal {row['signal_fraction']:.2f}", f"kl {row.get('kl', 0.0):.4f}",
             f"ent {row.get('entropy', 0.0):.3f}", f"clip {row.get('clipfrac', 0.0):.3f}",
             f"gen {row.get('gen_tok_s', 0.0):.0f} tok/s", f"train {row.get('train_tok_s', 0.0):.0f} tok/s"]
    per = [f"{k.split('/', 1)[1]} {v:.2f}" for k, v in row.items() if k.startswith("solve/")]
    return "  ".join(parts) + ("  [dim](" + ", ".join(per) + ")[/]" if per else "")
