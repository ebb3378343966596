"""Recipe: multi-harness RL with Within vs Cross advantage groups, evaluated on a sealed unseen harness.

The multi-harness paper trains one policy through several harnesses and compares grouping
episodes per (task, harness) — *Within* — against pooling a task's harnesses — *Cross* —
then evaluates on harnesses sealed away from training. The agentic-coding paper adds what
to look at besides pass@1: steps per episode and failure modes. At small scale:

  1. a tiny causal LM (tokenizer trained here on the trained harnesses' text, random
     Qwen2-style weights) is warm-started by SFT on oracle demonstrations through ONE harness;
  2. one seal holds the unseen harness (training refuses it);
  3. RL (GRPO by default) through several harnesses, `within` and `cross`, several seeds each;
  4. every policy (SFT baseline, each run) is evaluated on held-out tasks through the trained
     harnesses and — once, recorded against the seal — through the sealed harness;
  5. report: solve rates with CIs, steps per episode, failure modes, group-signal fraction.

    harnessrl recipe multi-harness                                  # tiny LM on the lookup suite, CPU
    harnessrl recipe multi-harness --model Qwen/Qwen3-8B --lora-rank 32   # the same on a GPU
    harnessrl recipe multi-harness --scale real-programs            # the real agent programs (tiny LM, CPU)

With real agent programs as harnesses (`--scale real-programs`, multi_harness_programs.py) the
recipe also stores the oracle's episodes through every trained program (the frozen evidence that
each task is solvable as that program runs it), can start from a warm start made elsewhere
(`warm_start_model`), and samples the start model through every program (`ref_samples`) for the
ceiling decomposition of cross-program differences on the same model.

Jobs are resumable: each run has its own checkpoint folder; finished pieces are reused.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from typing import Literal

from pydantic import Field

from harnessrl.config import ConfigError
from harnessrl.episode import Episode
from harnessrl.evaluate.seal import create_seal, load_seal
from harnessrl.harness.base import Harness, make_harness
from harnessrl.policies.lm import LMPolicy
from harnessrl.policies.scripted import Oracle
from harnessrl.records import RecordStore
from harnessrl.recipes import multi_harness_programs as programs
from harnessrl.recipes.lm_base import LMRecipeConfig, policy_config, sampling_group_size
from harnessrl.recipes.splits import split_tasks
from harnessrl.recipes.workers import all_runs, folder_lock, run_pool
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.recipes.engine import train_agent
from harnessrl.rollout.envs import open_env
from harnessrl.tasks.contract import TaskLike
from harnessrl.train.agent import AgentTrainConfig
from harnessrl.train.manifest import MANIFEST, build_manifest, freeze
from harnessrl.train.sft import build_tiny_for
from harnessrl.train.sft import warm_start as sft_warm_start
from harnessrl.train.tasks import load_tasks, task_id

CLAIM = ("Multi-harness RL: the evaluation harness moves solve rates far more (2.14% -> 9.27%) than the grouping "
         "rule (Within = task x harness groups vs Cross = task groups), which has a negligible effect; Cross credit "
         "does not make policies more portable to unseen harnesses than Within.")


class MultiHarnessConfig(LMRecipeConfig):
    scale: Literal["small", "paper", "real-programs"] = "small"
    sft_harness: str = "lookup-plain"
    train_harnesses: list[str] = ["lookup-plain", "lookup-kv", "lookup-brief"]
    sealed_harness: str = "lookup-json"
    eval_fraction: float = Field(0.2, gt=0, lt=1, description="Last fraction of the suite held out for evaluation.")
    rules: list[str] = ["within", "cross"]
    seeds: list[int] = [0, 1, 2]
    updates: int = Field(80, ge=1)
    temperature: float = 1.0
    eval_seeds: int = Field(2, ge=1, description="Greedy episodes per held-out task and harness (different worlds).")
    train_tasks: int | None = Field(None, ge=1, description="Use only the first N training tasks (None: all).")
    eval_tasks: int | None = Field(None, ge=1, description="Evaluate on only the first N held-out tasks (None: all).")
    train_task_ids: list[str] | None = Field(None, description="Train on exactly these tasks of the suite (ids, with or "
                                             "without the suite prefix) instead of the split's first `train_tasks`.")
    eval_task_ids: list[str] | None = Field(None, description="Evaluate on exactly these tasks (disjoint from the "
                                            "training ones) instead of the split's first `eval_tasks`.")
    max_turns: int | None = Field(None, ge=1, description="Override every harness's turn limit (model calls of a "
                                  "program), in training and evaluation alike; None keeps each harness's own.")
    oracle_records: bool = Field(False, description="Store the oracle's episodes through every trained harness on the "
                                 "training tasks first (run oracle-records); the tiny LM's tokenizer is trained on them.")
    warm_start_model: str | None = Field(None, description="Start from this warm start instead of SFT here: a merged "
                                         "model folder (e.g. the agentic-coding recipe's OUT/sft) or a LoRA adapter "
                                         "folder on `model`.")
    ref_samples: int = Field(0, ge=0, description="Sampled episodes of the start model per held-out task and harness "
                             "(sealed one included) for the ceiling decomposition (0: none; the hard ceiling is pass@k).")
    tiny_positions: int = Field(512, ge=128, description="Context of the tiny LM built when no model is given.")
    tiny_vocab: int = Field(1024, ge=256, description="Vocabulary of the tiny LM's tokenizer.")

def preset(scale: str) -> dict[str, Any]:
    """small: the tiny LM on the lookup suite (minutes on 2 CPU cores). paper: the coding harnesses
    of the paper on the built-in code suite, for a real model on a GPU (--model, --lora-rank 32)."""
    if scale == "small":
        return {"scale": "small"}
    if scale == "paper":
        return {"scale": "paper", "suite": "code-v1", "sft_harness": "aider",
                "train_harnesses": ["aider", "openhands", "qwen_code", "swe_agent"], "sealed_harness": "terminus",
                "sft_seeds": 1, "sft_epochs": 2, "sft_lr": 1e-4, "sft_batch": 8, "lora_rank": 32, "updates": 100,
                "group_size": 8, "tasks_per_update": 4, "lr": 1e-5, "objective": "gspo", "max_new_tokens": 1024,
                "max_context_tokens": 16384, "eval_seeds": 4, "workers": 1, "engine": "trl"}
    if scale == "real-programs":  # the real agent programs, a tiny LM: the smallest run that exercises every piece
        return {"scale": "real-programs", **REAL_PROGRAMS}
    raise ConfigError(f"scale {scale!r}: choose small, paper or real-programs")


#: --scale real-programs: three real programs trained, the fourth sealed. mini-swe-agent (text protocol),
#: aider-cli (SEARCH/REPLACE) and qwen-code-cli-8k (tool calls) run an oracle episode in about 1-2.5 min each on
#: a loaded 2-core machine; openhands-cli-8k is the slowest (about 3.5 min: 30 s of start-up), so it is the one
#: evaluated once, under the seal. The -8k specs fit SmolLM2's 8k window (docs/real-harnesses.md).
REAL_PROGRAMS: dict[str, Any] = {
    "suite": "code-v1", "sft_harness": "aider-cli", "train_harnesses": ["mini-swe-agent", "aider-cli", "qwen-code-cli-8k"],
    "sealed_harness": "openhands-cli-8k", "train_tasks": 1, "eval_tasks": 1, "max_turns": 4, "oracle_records": True,
    "ref_samples": 2, "sft_seeds": 1, "sft_epochs": 8, "sft_batch": 4, "sft_lr": 3e-3, "rules": ["within", "cross"],
    "seeds": [0], "updates": 1, "group_size": 2, "tasks_per_update": 1, "max_new_tokens": 24, "eval_seeds": 1,
    "workers": 1, "tiny_positions": 16384, "tiny_vocab": 4096}


# ----------------------------------------------------------------------------------------
# 1. The model and its warm start


def tasks_of(cfg: MultiHarnessConfig) -> tuple[list[Any], list[Any]]:
    """(training tasks, held-out tasks): the last `eval_fraction` of the suite is held out; then the
    first `train_tasks` / `eval_tasks` of each (a small run on slow harnesses such as real programs).
    `train_task_ids` / `eval_task_ids` name the tasks instead, e.g. the ones a warm start solves sometimes,
    so that groups have mixed outcomes."""
    tasks = load_tasks(cfg.suite)
    cut = int(round(len(tasks) * (1 - cfg.eval_fraction)))
    train, held = split_tasks(tasks, len(tasks) - cut, what=f"eval_fraction={cfg.eval_fraction}")
    train, held = train[:cfg.train_tasks], held[:cfg.eval_tasks]
    by_id = {task_id(t): t for t in tasks}

    def named(field: str, ids: list[str]) -> list[Any]:
        full = [i if i in by_id else f"{cfg.suite}/{i}" for i in ids]
        unknown = [i for i, f in zip(ids, full) if f not in by_id]
        if unknown or not ids:
            raise ConfigError(f"{field}: {unknown or 'empty list'} not task(s) of suite {cfg.suite!r}; "
                              f"choose from: {', '.join(sorted(by_id))}")
        return [by_id[f] for f in dict.fromkeys(full)]

    train = named("train_task_ids", cfg.train_task_ids) if cfg.train_task_ids is not None else train
    held = named("eval_task_ids", cfg.eval_task_ids) if cfg.eval_task_ids is not None else held
    both = sorted({task_id(t) for t in train} & {task_id(t) for t in held})
    if both:
        raise ConfigError(f"train_task_ids / eval_task_ids: {both} would be both trained on and held out; "
                          "name disjoint tasks")
    return train, held


def harness(cfg: MultiHarnessConfig, spec: str) -> Harness:
    """A harness with the recipe's turn limit, if it sets one."""
    return programs.harness_of(spec, cfg.max_turns)


def build_model(cfg: MultiHarnessConfig, out: Path, train: list[Any], records: list[Episode] | None = None) -> str:
    """The model path: the given one, or a tiny LM whose tokenizer saw only the trained harnesses' text
    (the oracle records' text when there are records)."""
    if cfg.model:
        return cfg.model
    if records:
        return programs.build_tiny_from_records(out / "model", records, size=cfg.tiny_size, vocab_size=cfg.tiny_vocab,
                                                max_positions=cfg.tiny_positions)
    return build_tiny_for(out / "model", Oracle(), [cfg.sft_harness, *cfg.train_harnesses], train, size=cfg.tiny_size,
                          vocab_size=cfg.tiny_vocab, max_positions=cfg.tiny_positions)


def warm_start(cfg: MultiHarnessConfig, out: Path, model: str, train: list[Any],
               progress: Callable[[str, int, int | None], None]) -> tuple[str, dict[str, Any]]:
    """SFT on oracle demonstrations through the one SFT harness; returns the merged model's path.
    With `warm_start_model` that warm start is used as it is (no SFT here)."""
    if cfg.warm_start_model:
        path = programs.start_model(cfg.warm_start_model, cfg.model, out)
        return path, programs.warm_start_info(path, LMPolicy.from_config(policy_config(cfg, path)))
    policy_cfg = policy_config(cfg, model, lora_rank=cfg.lora_rank)
    return sft_warm_start(out / "sft", policy_cfg, Oracle(), cfg.sft_harness, train[:cfg.sft_tasks], seeds=cfg.sft_seeds,
                          epochs=cfg.sft_epochs, lr=cfg.sft_lr, batch_rows=cfg.sft_batch,
                          micro_batch_tokens=cfg.sft_micro_batch_tokens, progress=progress, seals_dir=out / "seals")


def make_seal(cfg: MultiHarnessConfig, out: Path) -> Any:
    """One seal per recipe folder, holding the unseen harness; created before any RL."""
    seals = out / "seals"
    name = "multi-harness-" + hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:10]
    try:
        return load_seal(name, seals)
    except ConfigError:
        return create_seal(name, harnesses=[harness(cfg, cfg.sealed_harness)], suite=cfg.suite, directory=seals,
                           note="the unseen harness of `harnessrl recipe multi-harness`")


# ----------------------------------------------------------------------------------------
# 2. RL runs and evaluations (one job per rule x seed, in worker processes)


def evaluate(policy: LMPolicy, harness_ids: list[str], tasks: list[TaskLike], seeds: int, run_id: str,
             store: RecordStore, group: int = 256, max_turns: int | None = None) -> list[str]:
    """Greedy episodes of `policy` on every (task, harness, seed); stored once (idempotent on resume)."""
    done = store.sql("SELECT episode_id FROM episodes WHERE run_id = ?", [run_id]).column("episode_id").to_pylist()
    items = [RolloutItem(programs.harness_of(h, max_turns), t, 10_000 + s) for h in harness_ids for t in tasks
             for s in range(seeds)]
    ids = [f"{run_id}-{i:05d}" for i in range(len(items))]
    if set(ids) <= set(done):
        return ids
    policy.cfg = policy.cfg.model_copy(update={"temperature": 0.0})
    policy.reseed(0)
    episodes: list[Episode] = []
    for lo in range(0, len(items), group):  # bounded batches (sampling_group_size): memory, and a crash loses little
        episodes += run_group(policy, items[lo:lo + group], run_id=run_id, key_prefix=f"{run_id}-{lo}-")
    for eid, ep in zip(ids, episodes):
        ep.episode_id = eid
        ep.metadata["eval"] = True
    store.append([e for e in episodes if e.episode_id not in set(done)])
    return ids


def rl_config(cfg: MultiHarnessConfig, out: Path, sft_model: str, rule: str, seed: int, train: list[Any]) -> AgentTrainConfig:
    return AgentTrainConfig(
        policy=policy_config(cfg, sft_model, lora_rank=cfg.lora_rank, temperature=cfg.temperature),
        micro_batch_tokens=cfg.micro_batch_tokens,
        run_dir=str(out / "runs" / f"{rule}-s{seed}"), store=str(out / "store"), run_id=f"{rule}-s{seed}",
        suite=cfg.suite, tasks=[task_id(t) for t in train], harnesses=list(cfg.train_harnesses),
        group_size=cfg.group_size, tasks_per_update=cfg.tasks_per_update, updates=cfg.updates, grouping=rule,
        objective=cfg.objective, lr=cfg.lr, kl_coef=cfg.kl_coef, seed=seed, seals_dir=str(out / "seals"),
        max_turns=cfg.max_turns,
        manifest=str(out / MANIFEST), report_to=cfg.report_to)


def job_threads(workers: int, cpus: int | None) -> int:
    """CPU threads for one training job: the cores shared among the jobs that run at once. One job alone
    (workers 1, e.g. real programs with SmolLM2) gets every core: its update runs forward and backward
    passes over rows of thousands of tokens, large enough to split (a 4k-token SmolLM2 forward: 11 s on
    2 threads, about twice that on one). Decoding keeps its own single thread (policies/generation.py)."""
    return max(1, (cpus or 1) // max(1, workers))


def run_job(cfg_json: str, out: str, sft_model: str, rule: str, seed: int, queue: Any = None) -> dict[str, Any]:
    """Train one (rule, seed) run to the end (resuming its checkpoint) and evaluate its final policy."""
    cfg, out_p = MultiHarnessConfig.model_validate_json(cfg_json), Path(out)
    if not torch.cuda.is_available():
        torch.set_num_threads(job_threads(cfg.workers, os.cpu_count()))
    train, held_out = tasks_of(cfg)
    tcfg = rl_config(cfg, out_p, sft_model, rule, seed, train)
    key = f"{rule}-s{seed}"
    on_update = (lambda r: queue.put((key, r["update"], cfg.updates))) if queue else None
    t0 = time.perf_counter()
    trained = train_agent(tcfg, train, cfg.engine, on_update)
    rows = trained.rows
    # the updates' own timings survive a resume (a resumed, finished run trains for ~0 s in this process)
    timed = [r["time_rollout_s"] + r["time_update_s"] for r in rows if "time_rollout_s" in r and "time_update_s" in r]
    train_s = sum(timed) if len(timed) == len(rows) and rows else time.perf_counter() - t0
    store = RecordStore(tcfg.store)
    group = sampling_group_size(cfg)
    ids = evaluate(trained.policy, cfg.train_harnesses, held_out, cfg.eval_seeds, f"eval-{key}", store, group, cfg.max_turns)
    sealed = evaluate(trained.policy, [cfg.sealed_harness], held_out, cfg.eval_seeds, f"sealed-{key}", store, group,
                      cfg.max_turns)
    return {"key": key, "rule": rule, "seed": seed, "metrics": rows, "eval_ids": ids, "sealed_ids": sealed, "train_s": train_s}


def run(cfg: MultiHarnessConfig, out: str | Path, *, progress: Callable[[str, int, int | None], None] = lambda *a: None
        ) -> dict[str, Any]:
    """The whole recipe; returns what the report needs."""
    with folder_lock(out):  # one run per folder, and no survivor of a killed one
        return _run(cfg, Path(out), progress)


def _run(cfg: MultiHarnessConfig, out: Path, progress: Callable[[str, int, int | None], None]) -> dict[str, Any]:
    t0 = time.perf_counter()
    train, held_out = tasks_of(cfg)
    for h in [cfg.sft_harness, cfg.sealed_harness, *cfg.train_harnesses]:
        make_harness(h)  # an unknown harness fails here, before any work
    if cfg.sealed_harness in cfg.train_harnesses or cfg.sealed_harness == cfg.sft_harness:
        raise ConfigError(f"sealed_harness {cfg.sealed_harness!r} is also a training (or SFT) harness; it must be unseen")
    seal = make_seal(cfg, out)  # before any training-side episode: the records and SFT refuse the sealed harness
    store = RecordStore(out / "store")
    records = (programs.oracle_records(store, [harness(cfg, h) for h in dict.fromkeys([*cfg.train_harnesses])], train,
                                       out / "seals") if cfg.oracle_records else [])
    progress("oracle records", len(records), len(records))
    model = build_model(cfg, out, train, records)
    sft_model, sft_info = warm_start(cfg, out, model, train, progress)
    base = LMPolicy.from_config(policy_config(cfg, sft_model))
    group = sampling_group_size(cfg)
    sft_ids = evaluate(base, cfg.train_harnesses, held_out, cfg.eval_seeds, "eval-sft", store, group, cfg.max_turns)
    sft_sealed = evaluate(base, [cfg.sealed_harness], held_out, cfg.eval_seeds, "sealed-sft", store, group, cfg.max_turns)
    ref_ids: list[str] = []
    if cfg.ref_samples:  # the start model through every program: each program's ceiling for this model
        ref_ids = programs.reference_samples(base, [harness(cfg, h) for h in cfg.train_harnesses], held_out,
                                             cfg.ref_samples, cfg.temperature, "ref", store, group)
        ref_ids += programs.reference_samples(base, [harness(cfg, cfg.sealed_harness)], held_out, cfg.ref_samples,
                                              cfg.temperature, "sealed-ref", store, group)
    del base
    # Within and Cross train on provably identical task-harness records: one frozen manifest, checked by every run
    manifest_sha = freeze(out / MANIFEST, build_manifest(train, [harness(cfg, h) for h in cfg.train_harnesses], open_env))
    jobs = [(rule, seed) for rule in cfg.rules for seed in cfg.seeds]
    cfg_json = cfg.model_dump_json()
    if cfg.workers <= 1:
        finished: set[str] = set()

        def on_message(key: str, i: int, n: int) -> None:  # in process: count whole runs
            if i == n:
                finished.add(key)
                progress("RL runs", len(finished), len(jobs))
    else:
        on_message = all_runs(progress, "RL updates (all runs)", len(jobs))
    results = run_pool(run_job, [(cfg_json, str(out), sft_model, rule, seed) for rule, seed in jobs],
                       workers=cfg.workers, on_message=on_message, lock_dir=out)
    results.sort(key=lambda r: (cfg.rules.index(r["rule"]), r["seed"]))
    return {"cfg": cfg, "out": out, "seal": seal, "sft_model": sft_model, "sft": sft_info, "results": results,
            "sft_eval_ids": sft_ids, "sft_sealed_ids": sft_sealed, "ref_ids": ref_ids,
            "oracle_records": programs.records_summary(records), "train_tasks": len(train), "eval_tasks": len(held_out),
            "manifest_sha256": manifest_sha, "manifest_records": len(train) * len(cfg.train_harnesses),
            "wall_s": time.perf_counter() - t0}
