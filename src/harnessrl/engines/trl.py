"""The TRL engine: harnessrl rollouts inside TRL's `GRPOTrainer` (accelerate: DDP, DeepSpeed, FSDP; vLLM).

    engine = TRLEngine(load_config(TRLRunConfig, "run.yaml"))
    engine.run(resume=False)

    # one process                      harnessrl train agent --engine trl -c run.yaml
    # many processes / GPUs / nodes    accelerate launch [--config_file zero2.yaml] -m harnessrl.engines.trl -c run.yaml

What the engine adds to GRPOTrainer, and nothing else:
  1. the dataset: one row per (task, harness) [within] or per task [cross] (trl_rollout.dataset_rows)
  2. rollout_func: those rows as multi-turn harnessrl episodes, sampled from the trained weights
     (or TRL's vLLM), turned into prompt / completion / env_mask / behaviour log-probs rows,
     written to the record store (trl_rollout.HarnessRollout)
  3. reward: the verifier's reward of each episode (trl_rollout.harness_reward)
  4. config: the native run file translated key by key (trl_config.translate)
Advantages, the loss, KL, optimizer, checkpoints, distributed training and vLLM weight sync are TRL's.

Checkpoints are TRL's (`<run_dir>/checkpoint-N`); `resume` continues from the newest one with the
optimizer, scheduler, RNG and step counter restored. The config is kept beside them
(`harnessrl_config.json`) and a resume with a different one is refused, as in native training.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from harnessrl.config import ConfigError, load_config
from harnessrl.engines.trl_config import TRLPlan, TRLRunConfig, translate
from harnessrl.engines.trl_rollout import Collect, HarnessRollout, dataset_rows, harness_reward
from harnessrl.harness.base import Harness, make_harness
from harnessrl.rewards import check_tasks
from harnessrl.rollout.loop import task_id_of
from harnessrl.tasks.contract import TaskLike
from harnessrl.train.checkpoint import check_same_config
from harnessrl.train.manifest import freeze_training_set
from harnessrl.train.metrics import MetricsTable, share_trackio_store
from harnessrl.train.tasks import check_first_prompts_fit, check_trainable, load_tasks
from harnessrl.fileio import atomic_write_text

CONFIG_FILE = "harnessrl_config.json"


class TRLEngine:
    def __init__(self, cfg: TRLRunConfig, *, tasks: list[TaskLike] | None = None, harnesses: list[Harness] | None = None,
                 open_env: Callable[[Any, int], Any] | None = None, collect: Collect | None = None):
        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is marked experimental in TRL 1.x
        os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
        if "wandb" in cfg.report_to:
            os.environ.setdefault("WANDB_MODE", "offline")  # as in native training: no server unless the user asks
        share_trackio_store(cfg.run_dir, cfg.report_to)  # run_dir/trackio, as in native training (unless TRACKIO_DIR)
        import torch
        from accelerate import PartialState

        from harnessrl.policies.lm import _quiet_transformers, check_model_path, load_tokenizer

        self.cfg, self._open_env = cfg, open_env
        self.run_dir = Path(cfg.run_dir)
        self.run_id = cfg.run_id or self.run_dir.name
        cuda = torch.cuda.is_available()
        state = PartialState(cpu=not cuda)  # under torchrun / accelerate launch: joins the process group (gloo on CPU)
        self.is_main = state.is_main_process
        # 1. Bad input fails here, before any model is loaded.
        self.plan: TRLPlan = translate(cfg, state.num_processes, cuda=cuda)
        self.harnesses = harnesses or [self._harness(h) for h in cfg.harnesses]
        self.tasks = tasks if tasks is not None else load_tasks(cfg.suite, cfg.tasks)
        check_trainable(self.tasks, self.harnesses, cfg.seals_dir)
        check_tasks(self.tasks)  # the tasks' own reward functions (task.toml) import before any model loads
        if cfg.tasks_per_update > len(self.tasks):
            raise ConfigError(f"tasks_per_update: {cfg.tasks_per_update} but the run has {len(self.tasks)} task(s); "
                              f"GRPOTrainer draws distinct rows per update, so set tasks_per_update <= {len(self.tasks)}")
        check_model_path(cfg.policy.model)
        _quiet_transformers()
        tokenizer = load_tokenizer(cfg.policy.model)
        self._preflight(tokenizer, open_env)
        # 2. The trainer.
        from datasets import Dataset
        from trl import GRPOConfig

        rows = dataset_rows([task_id_of(t) for t in self.tasks], [h.id for h in self.harnesses], self.plan.grouping)
        self.rollout = HarnessRollout(
            policy_cfg=cfg.policy, tokenizer=tokenizer, tasks=self.tasks, harnesses=self.harnesses,
            num_generations=self.plan.num_generations, store=cfg.store or str(self.run_dir / "store"),
            run_id=self.run_id, seed=cfg.seed, open_env=open_env, collect=collect, rewards=cfg.reward_hook)
        peft_config = None
        if self.plan.lora:
            from peft import LoraConfig

            peft_config = LoraConfig(**self.plan.lora)
        self.trainer = _trainer_class()(
            model=cfg.policy.model, reward_funcs=[harness_reward], args=GRPOConfig(**self.plan.args),
            train_dataset=Dataset.from_list(rows), processing_class=tokenizer, peft_config=peft_config,
            rollout_func=self.rollout)

    def _harness(self, spec: str) -> Harness:
        h = make_harness(spec)
        if self.cfg.max_turns is not None:
            h.spec = h.spec.model_copy(update={"max_turns": self.cfg.max_turns})
        return h

    def _preflight(self, tokenizer: Any, open_env: Callable[[Any, int], Any] | None) -> None:
        """Every harness's first prompt (on the longest instruction) plus a turn must fit the window (as native)."""
        from transformers import AutoConfig

        from harnessrl.policies.chat import ChatEncoder
        from harnessrl.rollout.envs import open_env as default_open_env

        window = getattr(AutoConfig.from_pretrained(self.cfg.policy.model), "max_position_embeddings", None) or 4096
        encoder = ChatEncoder(tokenizer, name=f"model {self.cfg.policy.model!r}")
        check_first_prompts_fit(
            self.tasks, self.harnesses, open_env or default_open_env,
            lambda messages: len(encoder.encode_chat(messages)),
            self.cfg.policy.max_new_tokens, min(self.cfg.policy.max_context_tokens or window, window), self.cfg.policy.model)

    def run(self, resume: bool = False) -> list[dict[str, Any]]:
        """Train `updates` steps (continuing from the newest checkpoint when resume); returns the metric rows."""
        from transformers.trainer_utils import get_last_checkpoint

        last = get_last_checkpoint(str(self.run_dir)) if self.run_dir.is_dir() else None
        if last and not resume:
            raise ConfigError(f"{self.run_dir} already holds a checkpoint ({Path(last).name}); "
                              "pass --resume or use a new run_dir")
        self._check_config(resume=bool(last))
        if self.is_main:  # the frozen task-harness records (train/manifest.py), as in native training
            from harnessrl.rollout.envs import open_env

            self.manifest_sha256 = freeze_training_set(self.cfg, self.tasks, self.harnesses, self._open_env or open_env)
        t0 = time.perf_counter()
        self.trainer.train(resume_from_checkpoint=last if resume else None)
        self._summary(time.perf_counter() - t0)
        rows = self.metric_rows()
        if self.is_main:
            self.trainer.save_model(str(self.run_dir / "final"))
            MetricsTable(self.run_dir, rows).write()
        return rows

    def metric_rows(self) -> list[dict[str, Any]]:
        """One row per update from TRL's log history (rows use the native name `update` for the step)."""
        rows = []
        for entry in self.trainer.state.log_history:
            if "reward" in entry:
                rows.append({"update": int(entry["step"]), **{k: v for k, v in entry.items() if k != "step"}})
        return rows

    def _summary(self, wall: float) -> None:
        """Per process: steps, wall time, peak memory (GPU and resident) -> <run_dir>/engine_summary-rank<r>.json."""
        import resource

        import torch

        acc = self.trainer.accelerator
        out = {"rank": acc.process_index, "world_size": acc.num_processes, "global_step": self.trainer.state.global_step,
               "wall_s": round(wall, 3), "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
               "peak_gpu_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3) if torch.cuda.is_available() else None,
               "device": str(acc.device)}
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / f"engine_summary-rank{acc.process_index}.json").write_text(json.dumps(out, indent=2))

    def _check_config(self, resume: bool) -> None:
        if not self.is_main:
            return
        path = self.run_dir / CONFIG_FILE
        now = self.cfg.model_dump(mode="json")
        if resume and path.exists():
            check_same_config(self.cfg, json.loads(path.read_text()), self.run_dir)  # the native engine's check
        self.run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(now, indent=2))


def _trainer_class() -> type:
    """GRPOTrainer whose row sampler shuffles from (seed, epoch).

    TRL's RepeatSampler draws every epoch from one generator, so a run resumed from a checkpoint
    restarts that stream and trains on other rows than the uninterrupted run would have; the
    Trainer calls `set_epoch` on resume, and here that reseeds the stream, so a resumed run draws
    the same rows (and, with our per-step sampling seeds, the same episodes).
    """
    from trl import GRPOTrainer
    from trl.trainer.utils import RepeatSampler

    class EpochRepeatSampler(RepeatSampler):
        def set_epoch(self, epoch: int) -> None:
            if self.shuffle:
                self.generator.manual_seed(int(self.seed or 0) * 1_000_003 + int(epoch))

    class HarnessGRPOTrainer(GRPOTrainer):
        def _get_train_sampler(self, dataset: Any = None) -> Any:
            base = super()._get_train_sampler(dataset)
            return EpochRepeatSampler(base.data_source, base.mini_repeat_count, base.batch_size, base.repeat_count,
                                      base.shuffle, base.seed)

    return HarnessGRPOTrainer


def main(argv: list[str] | None = None) -> int:
    """`python -m harnessrl.engines.trl -c run.yaml [--set k=v ...] [--resume]` (accelerate launch -m ... too)."""
    parser = argparse.ArgumentParser(prog="python -m harnessrl.engines.trl", description=__doc__.split("\n")[0])
    parser.add_argument("--config", "-c", type=Path, help="YAML/TOML run file (AgentTrainConfig keys + a trl: block)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="KEY=VALUE override")
    parser.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in run_dir")
    a = parser.parse_args(argv)
    try:
        cfg = load_config(TRLRunConfig, a.config, a.overrides)
        engine = TRLEngine(cfg)
        if engine.is_main:
            for note in engine.plan.notes:
                print(f"note: {note}", file=sys.stderr)
        engine.run(resume=a.resume)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if engine.is_main:
        print(f"episodes: {cfg.store or Path(cfg.run_dir) / 'store'}  adapter/weights: {Path(cfg.run_dir) / 'final'}  "
              f"metrics: {Path(cfg.run_dir) / 'metrics.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
