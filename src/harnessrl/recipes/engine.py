"""Which trainer runs a recipe's RL: harnessrl's own (native) or TRL's GRPOTrainer (engines/trl.py).

    trained = train_agent(tcfg, tasks, engine="trl", on_update=lambda row: ...)
    trained.rows      # one metrics row per update ({"update": n, ...}), either engine
    trained.policy    # the trained LMPolicy, ready to evaluate or save

A recipe builds one `AgentTrainConfig` per run and hands it here; nothing else in the recipe
knows which engine trained. Under `trl` the same keys go through `engines.trl_config.translate`
(every key mapped or refused with a named fix), episodes land in the same record store, and the
trained weights come back from `<run_dir>/final` (an adapter under LoRA, else a full model).
Two keys the recipes set for the native trainer have no TRL meaning and are adapted here, in
the open: `micro_batch_tokens` (TRL bounds memory by rollouts per device instead) is dropped, and
a start adapter (further training from a saved LoRA run) is merged into a model folder first,
because GRPOTrainer starts a fresh adapter on the model it is given.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from harnessrl.config import ConfigError
from harnessrl.episode import Episode
from harnessrl.fileio import atomic_write_text
from harnessrl.policies.lm import LMPolicy
from harnessrl.records import RecordStore
from harnessrl.tasks.contract import TaskLike
from harnessrl.train.agent import AgentTrainConfig, AgentTrainer
from harnessrl.train.metrics import episode_columns, harness_columns

ENGINES = ("native", "trl")
#: AgentTrainConfig keys a recipe sets for the native trainer that GRPOTrainer has no equivalent for.
NATIVE_ONLY = {"micro_batch_tokens"}


@dataclass
class Trained:
    rows: list[dict[str, Any]]
    policy: LMPolicy


def check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise ConfigError(f"engine: {engine!r}; choose {' or '.join(ENGINES)}")
    return engine


def train_agent(tcfg: AgentTrainConfig, tasks: list[TaskLike], engine: str = "native",
                on_update: Callable[[dict[str, Any]], None] | None = None) -> Trained:
    """Train `tcfg` to its last update (continuing its checkpoint if one exists) with `engine`."""
    if check_engine(engine) == "native":
        trainer = AgentTrainer(tcfg, tasks=tasks, on_update=on_update)
        rows = trainer.run(resume=True)  # continues a checkpoint if the run has one, else starts
        return Trained(rows, trainer.policy)
    return _train_trl(tcfg, tasks, on_update)


def _train_trl(tcfg: AgentTrainConfig, tasks: list[TaskLike], on_update: Callable[[dict[str, Any]], None] | None) -> Trained:
    run_dir = Path(tcfg.run_dir)
    final = run_dir / "final"
    policy_cfg = tcfg.policy
    if policy_cfg.adapter:  # GRPOTrainer puts a new adapter on the model it gets: start from the merged weights
        merged = run_dir / "start-merged"
        if not (merged / "config.json").exists():  # written beside, then renamed: never half a model
            partial = run_dir / "start-merged.partial"
            shutil.rmtree(partial, ignore_errors=True)
            LMPolicy.from_config(policy_cfg).save_merged(partial)
            os.replace(partial, merged)
        policy_cfg = policy_cfg.model_copy(update={"model": str(merged), "adapter": None})
    if (final / "done.json").exists():  # finished earlier (a resumed recipe): nothing to load or train
        logged = json.loads((final / "done.json").read_text())["logged"]
    else:
        engine = _trl_engine(tcfg, policy_cfg, tasks)
        _forward_progress(engine, on_update)
        engine.run(resume=True)  # resume=True also starts fresh when run_dir holds no checkpoint
        logged = engine.metric_rows()
        atomic_write_text(final / "done.json", json.dumps({"logged": logged}))
    store = RecordStore(tcfg.store or str(run_dir / "store"))
    run_id = (tcfg.run_id or run_dir.name).replace("'", "''")
    episodes = store.episodes(where=f"run_id = '{run_id}'")
    rows = native_rows(episodes, logged)
    trained = policy_cfg.model_copy(update={"adapter": str(final)} if policy_cfg.lora_rank else {"model": str(final)})
    return Trained(rows, LMPolicy.from_config(trained))


def _trl_engine(tcfg: AgentTrainConfig, policy_cfg: Any, tasks: list[TaskLike]) -> Any:
    """The run as the TRL engine's config: only the keys the recipe set, less the native-only ones."""
    from harnessrl.engines.trl import TRLEngine
    from harnessrl.engines.trl_config import TRLRunConfig

    data = {k: getattr(tcfg, k) for k in set(tcfg.model_fields_set) - NATIVE_ONLY - {"policy"}}
    data["policy"] = policy_cfg.model_dump(include=(set(policy_cfg.model_fields_set) | {"model"}) - {"adapter"})
    return TRLEngine(TRLRunConfig.model_validate(data), tasks=tasks)


def _forward_progress(engine: Any, on_update: Callable[[dict[str, Any]], None] | None) -> None:
    from transformers import PrinterCallback, TrainerCallback

    engine.trainer.remove_callback(PrinterCallback)  # the recipe shows progress bars, not TRL's log dicts
    if on_update is None:
        return

    class Progress(TrainerCallback):  # TRL logs one row per step: pass it on as the native trainer does
        def on_log(self, args, state, control, logs=None, **kw):  # noqa: ANN001
            if logs and "reward" in logs:
                on_update({"update": int(state.global_step), **logs})

    engine.trainer.add_callback(Progress())


def native_rows(episodes: list[Episode], logged: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One metrics row per TRL step with the native trainer's column names, so the recipes' reports
    read either engine: episode columns from the step's stored episodes (`metadata.update`), the
    rest from TRL's log (signal_fraction = 1 - TRL's frac_reward_zero_std, kl, loss, ...)."""
    by_update: dict[int, list[Episode]] = {}
    for e in episodes:
        by_update.setdefault(int(e.metadata.get("update", 0)), []).append(e)
    rows = []
    for log in logged:
        u = int(log["update"])
        mine = by_update.get(u - 1, [])  # episodes carry the step TRL was at when it sampled them (0-based)
        row: dict[str, Any] = {**log, "update": u, "episodes": 0}
        if "frac_reward_zero_std" in log:
            row["signal_fraction"] = 1.0 - float(log["frac_reward_zero_std"])
        if mine:
            row.update(episode_columns(mine))
            row.update(harness_columns(mine, sorted({e.context.harness_id for e in mine})))
        rows.append(row)
    return rows
