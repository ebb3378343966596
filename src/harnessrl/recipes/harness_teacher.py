"""Recipe: what the harness taught — train in one harness, evaluate in all, decompose, predict gains.

The harness-teacher paper: under KL-regularised control a trained policy carries its harness's
action preferences; moving it to another harness changes both the achievable return (the
ceiling) and the policy's mismatch, so a cross-harness score difference mixes the two; and
ceiling and mismatch predict what further training in a harness gains. At small scale:

  1. a model (a tiny LM built here, or --model) is warm-started by SFT on oracle demonstrations
     through the training harness: this is the *reference* policy pi_ref;
  2. the unseen harness is sealed before any RL;
  3. the reference is sampled many times per held-out task under every harness: hard ceiling
     (pass@k), soft ceiling (beta log-mean-exp), reference score;
  4. the agent: RL (GRPO) from the reference in the training harness;
  5. the agent is sampled under every harness (with pi_ref's log-probs for KL and mismatch):
     every cross-harness difference is split into ceiling change minus headroom change;
     log-odds on contrasting actions show which preferences the agent carries;
  6. gain prediction: one round of further training in each calibration harness fits kappa in
     dS = kappa (C - S); the other harnesses get predicted gains; the agent trains further in
     the one with the highest prediction, and the observed gain is set next to the predicted;
  7. the sealed harness is evaluated once, recorded against its seal;
  8. with `betas`, a beta sweep (recipes/harness_teacher_beta.py): one agent per KL weight, its
     carried log-odds and mismatch next to the exact solver's prediction at that beta.

Every RL run is KL-regularised to its reference at `kl_coef` = `beta` (one value feeds training
and analysis), with the k2 estimator as a loss term and unscaled rewards: the combination whose
fixed point is the tilt pi_ref exp(r/beta)/Z (tests/analysis/test_beta_sweep.py checks it on a
bandit against analysis/klcontrol.py, and shows k1/k3 as loss terms miss it).

Every stage writes its results into the output folder and is skipped on --resume when done;
RL runs checkpoint every update. The same code runs a real model on a GPU (--model, --lora-rank).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harnessrl.analysis import ceiling
from harnessrl.analysis.preferences import preference_table
from harnessrl.config import ConfigError
from harnessrl.episode import Episode
from harnessrl.evaluate.contrasts import contrasts, describe_contrasts, score_contrasts
from harnessrl.evaluate.seal import create_seal, load_seal, write_sealed_eval
from harnessrl.fileio import atomic_write_text
from harnessrl.harness.base import load_spec, make_harness
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.policies.registry import PolicySpec
from harnessrl.policies.scripted import Oracle
from harnessrl.records import RecordStore
from harnessrl.recipes.lm_base import LazyPolicy, attach_ref_logprob, samples, sampling_group_size
# the settings live in harness_teacher_config; `preset` stays reachable as recipe.preset, like every recipe's
from harnessrl.recipes.harness_teacher_config import HarnessTeacherConfig, preset  # noqa: F401
from harnessrl.recipes.splits import split_tasks
from harnessrl.recipes.stages import check_same_config, json_stage
from harnessrl.recipes.workers import DirectQueue, all_runs, folder_lock, run_pool
from harnessrl.rollout.backends import Job, run_jobs
from harnessrl.recipes.engine import train_agent
from harnessrl.tasks.contract import TaskLike
from harnessrl.train.agent import AgentTrainConfig
from harnessrl.train.sft import build_tiny_for, warm_start
from harnessrl.train.tasks import load_tasks, task_id

Progress = Callable[[str, int, int | None], None]


def _direct(progress: Progress) -> DirectQueue:
    """The progress queue of one RL run in this process."""
    return DirectQueue(lambda name, i, n: progress(f"RL {name}", i, n))


def tasks_of(cfg: HarnessTeacherConfig) -> tuple[list[Any], list[Any]]:
    """(training tasks, evaluation tasks). held_out=tasks: the suite's last `eval_tasks` tasks are held out.
    held_out=seeds: the first `eval_tasks` tasks are also evaluated, on env seeds no training draws
    (demonstrations use seeds 0..sft_seeds-1, RL 31-bit hashes of (seed, update), sampling 100000 + ...)."""
    tasks = load_tasks(cfg.suite, cfg.tasks)
    if cfg.held_out == "seeds":
        if not 1 <= cfg.eval_tasks <= len(tasks):
            raise ConfigError(f"eval_tasks={cfg.eval_tasks} with held_out=seeds: choose 1..{len(tasks)} "
                              f"(the suite {cfg.suite!r} has {len(tasks)} tasks)")
        return list(tasks), list(tasks[:cfg.eval_tasks])
    return split_tasks(tasks, cfg.eval_tasks, what=f"eval_tasks={cfg.eval_tasks} in suite {cfg.suite!r}")


def policy_config(cfg: HarnessTeacherConfig, model: str, **kw: Any) -> LMConfig:
    return LMConfig(model=model, lora_rank=kw.pop("lora_rank", 0), device=cfg.device, temperature=1.0,
                    max_new_tokens=cfg.max_new_tokens, max_context_tokens=cfg.max_context_tokens,
                    gradient_checkpointing=cfg.gradient_checkpointing, **kw)


# ----------------------------------------------------------------------------------------
# Sampling a policy under harnesses (the estimators' input), idempotent in the record store


def sample(cfg: HarnessTeacherConfig, model: str, harness_ids: list[str], tasks: list[TaskLike], n: int, run_id: str,
           store: RecordStore, reference: LazyPolicy | None, progress: Progress, adapter: str | None = None) -> list[str]:
    """n temperature-1 episodes per (task, harness), stored under run_id with the reference's log-prob."""
    ids = [f"{run_id}-{i:06d}" for i in range(len(harness_ids) * len(tasks) * n)]
    have = set(store.sql("SELECT episode_id FROM episodes WHERE run_id = ?", [run_id]).column("episode_id").to_pylist())
    if set(ids) <= have:
        return ids
    opts = {"temperature": 1.0, "max_new_tokens": cfg.max_new_tokens, "device": cfg.device}
    if adapter:
        opts["adapter"] = adapter
    if cfg.max_context_tokens:
        opts["max_context_tokens"] = cfg.max_context_tokens
    jobs = [Job(load_spec(h), t, 100_000 + cfg.seed * 1000 + s) for h in harness_ids for t in tasks for s in range(n)]
    done = [0]

    def tick(chunk: list[Episode]) -> None:
        done[0] += len(chunk)
        progress(f"sampling {run_id}", done[0], len(jobs))

    episodes = run_jobs(PolicySpec("lm", model, opts), jobs, backend=cfg.backend, workers=cfg.workers,
                        group_size=sampling_group_size(cfg, n), run_id=run_id, address=cfg.ray_address, on_chunk=tick)
    for eid, ep in zip(ids, episodes):
        ep.episode_id = eid
    if reference is not None:
        attach_ref_logprob(reference.get(), episodes)
    store.append([e for e in episodes if e.episode_id not in have])
    return ids


# ----------------------------------------------------------------------------------------
# RL: the agent, and rounds of further training (each its own resumable run)


def agent_train_config(cfg: HarnessTeacherConfig, out: Path, start: tuple[str, str | None], harness: str, updates: int,
                       name: str, train: list[Any], kl_coef: float | None = None) -> AgentTrainConfig:
    """The trainer's settings for one RL run: KL-regularised to the reference (the SFT model) at
    kl_coef (default cfg.train_kl_coef, i.e. the analysis's beta), rewards unscaled so it is the beta."""
    return AgentTrainConfig(
        policy=policy_config(cfg, start[0], lora_rank=cfg.lora_rank, adapter=start[1]), run_dir=str(out / "runs" / name),
        store=str(out / "store"), run_id=f"train-{name}", suite=cfg.suite, tasks=[task_id(t) for t in train],
        harnesses=[harness], group_size=cfg.group_size, tasks_per_update=cfg.tasks_per_update, updates=updates,
        objective=cfg.objective, lr=cfg.lr, epochs=cfg.epochs, minibatches=cfg.minibatches,
        kl_coef=cfg.train_kl_coef if kl_coef is None else kl_coef, kl_estimator=cfg.kl_estimator,
        adv_scale=cfg.adv_scale, seed=cfg.seed, seals_dir=str(out / "seals"), micro_batch_tokens=cfg.micro_batch_tokens,
        report_to=cfg.report_to)


def train_run(cfg: HarnessTeacherConfig, out: Path, start: tuple[str, str | None], harness: str, updates: int,
              name: str, train: list[Any], queue: Any = None, kl_coef: float | None = None) -> str:
    """RL in one harness from `start` = (model, adapter or None); returns the saved model (or adapter) folder.

    The reference of the KL term is `start`'s model with its adapter off (LoRA: always the SFT model)
    or the run's starting weights (full fine-tuning: the SFT model for the agent and the beta sweep's
    agents; the agent itself for a round of further training)."""
    if not torch.cuda.is_available():
        torch.set_num_threads(1)
    final = out / "models" / name
    if (final / "done.json").exists():
        return str(final)
    tcfg = agent_train_config(cfg, out, start, harness, updates, name, train, kl_coef)
    on_update = (lambda r: queue.put((name, r["update"], updates))) if queue is not None else None
    train_agent(tcfg, train, cfg.engine, on_update).policy.save(final)
    atomic_write_text(final / "done.json", json.dumps({"harness": harness, "updates": updates, "start": list(start),
                                                       "kl_coef": tcfg.kl_coef, "kl_estimator": tcfg.kl_estimator}))
    return str(final)


def _model_and_adapter(cfg: HarnessTeacherConfig, sft_model: str, saved: str) -> tuple[str, str | None]:
    """A saved run is a full model (full fine-tuning) or an adapter on the SFT model (LoRA)."""
    return (sft_model, saved) if cfg.lora_rank else (saved, None)


def further_rounds(cfg: HarnessTeacherConfig, out: Path, start: tuple[str, str | None], harnesses: list[str], train: list[Any],
                   progress: Progress) -> dict[str, str]:
    """One round of further training per harness, in parallel worker processes on CPU."""
    if cfg.workers <= 1 or len(harnesses) == 1:
        on_message = lambda name, i, n: progress(f"RL {name}", i, n)  # noqa: E731
    else:
        on_message = all_runs(progress, "further training (all rounds)", len(harnesses))
    calls = [(cfg, out, start, h, cfg.further_updates, f"further-{h}", train) for h in harnesses]
    return dict(zip(harnesses, run_pool(train_run, calls, workers=cfg.workers, on_message=on_message, lock_dir=out)))


# ----------------------------------------------------------------------------------------
# The whole recipe


def run(cfg: HarnessTeacherConfig, out: str | Path, *, progress: Progress = lambda *a: None) -> dict[str, Any]:
    """Every stage in order (finished ones are reused); returns what the report needs."""
    with folder_lock(out):  # one run per folder, and no survivor of a killed one
        return _run(cfg, Path(out), progress)


def _run(cfg: HarnessTeacherConfig, out: Path, progress: Progress) -> dict[str, Any]:
    t0 = time.perf_counter()
    if not torch.cuda.is_available():  # one thread: faster for a tiny model, and the same floats on any CPU count
        torch.set_num_threads(1)
    train, held_out = tasks_of(cfg)
    for h in [*cfg.harnesses, *([cfg.sealed_harness] if cfg.sealed_harness else [])]:
        make_harness(h)  # an unknown harness fails here, before any work
    check_same_config(cfg, out / "config.json")
    atomic_write_text(out / "config.json", cfg.model_dump_json(indent=2))
    store = RecordStore(out / "store")

    # 1. the reference: a model warm-started on oracle demonstrations through the training harness
    model = cfg.model or build_tiny_for(out / "model", Oracle(), cfg.harnesses, train, size=cfg.tiny_size,
                                           max_positions=cfg.max_context_tokens or 512)
    sft_model, sft_info = warm_start(out / "sft", policy_config(cfg, model, lora_rank=cfg.lora_rank), Oracle(),
                                     cfg.train_harness, train[:cfg.sft_tasks], seeds=cfg.sft_seeds, epochs=cfg.sft_epochs,
                                     lr=cfg.sft_lr, batch_rows=cfg.sft_batch, micro_batch_tokens=cfg.sft_micro_batch_tokens,
                                     progress=progress, seals_dir=out / "seals")
    reference = LazyPolicy(policy_config(cfg, sft_model))

    # 2. the unseen harness is sealed before any RL touches the model
    seal = None
    if cfg.sealed_harness:
        name = "harness-teacher-" + hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:10]
        try:
            seal = load_seal(name, out / "seals")
        except ConfigError:
            seal = create_seal(name, harnesses=[make_harness(cfg.sealed_harness)], suite=cfg.suite,
                               directory=out / "seals", note="the unseen harness of the harness-teacher study")

    # 3. ceilings: the reference sampled many times under every harness
    json_stage(out, "reference", lambda: {"ids": sample(cfg, sft_model, cfg.harnesses, held_out, cfg.ref_samples, "ref",
                                                     store, reference, progress)})

    # 4-5. the agent: RL in the training harness, then sampled under every harness
    reference.release()  # the RL run loads its own model: never two full copies at once
    agent = _model_and_adapter(cfg, sft_model, train_run(cfg, out, (sft_model, None), cfg.train_harness,
                                                         cfg.agent_updates, "agent", train, _direct(progress)))
    json_stage(out, "agent_eval", lambda: {"ids": sample(cfg, agent[0], cfg.harnesses, held_out, cfg.eval_samples, "agent",
                                                      store, reference, progress, adapter=agent[1])})
    prefs = json_stage(out, "preferences", lambda: {"rows": _preferences(cfg, agent, reference, held_out)})

    # 6. gain prediction: fit kappa on the calibration rounds, train further where the prediction is highest
    reference.release()
    calib = further_rounds(cfg, out, agent, cfg.calibration_harnesses, train, progress)
    for h, saved in calib.items():
        m, a = _model_and_adapter(cfg, sft_model, saved)
        json_stage(out, f"after-{h}", lambda h=h, m=m, a=a: {"ids": sample(cfg, m, [h], held_out, cfg.eval_samples,
                                                                       f"after-{h}", store, reference, progress, adapter=a)})
    choice = json_stage(out, "choice", lambda: choose_harness(cfg, store))
    chosen = choice["harness"]
    reference.release()
    saved = further_rounds(cfg, out, agent, [chosen], train, progress)[chosen]
    m, a = _model_and_adapter(cfg, sft_model, saved)
    json_stage(out, f"after-{chosen}", lambda: {"ids": sample(cfg, m, [chosen], held_out, cfg.eval_samples,
                                                          f"after-{chosen}", store, reference, progress, adapter=a)})

    # 7. the sealed harness, evaluated once
    sealed = None
    if seal is not None:
        sealed = json_stage(out, "sealed", lambda: _sealed_eval(cfg, seal, sft_model, agent, held_out, store, reference, progress))

    # 8. the beta sweep: one agent per KL weight, next to the exact solver's prediction at that beta
    betas = None
    if cfg.betas:
        from harnessrl.recipes.harness_teacher_beta import beta_sweep  # it reuses this module's stages

        reference.release()
        betas = beta_sweep(cfg, out, sft_model, agent, train, held_out, store, reference, progress)

    return {"cfg": cfg, "out": out, "store": store, "sft": sft_info, "sft_model": sft_model, "seal": seal,
            "preferences": prefs["rows"], "contrast": describe_contrasts({getattr(t, "kind", "") for t in held_out}),
            "choice": choice, "sealed": sealed, "betas": betas,
            "analysis": analyze(cfg, store, chosen), "train_tasks": len(train), "eval_tasks": len(held_out),
            "parameters": sft_info.get("parameters"), "wall_s": time.perf_counter() - t0}


def _preferences(cfg: HarnessTeacherConfig, agent: tuple[str, str | None], reference: LazyPolicy,
                 held_out: list[Any]) -> list[dict[str, Any]]:
    """Log-odds of the registered contrast (a better vs a worse action), agent vs reference, under every harness."""
    policy = LMPolicy.from_config(policy_config(cfg, agent[0], adapter=agent[1]))
    items = contrasts([make_harness(h) for h in cfg.harnesses], held_out)
    return preference_table(items, score_contrasts(policy, items, reference=reference.get()), seed=cfg.seed)


def choose_harness(cfg: HarnessTeacherConfig, store: RecordStore) -> dict[str, Any]:
    """kappa from the calibration rounds; the candidate with the highest predicted gain kappa (C - S)."""
    reference, before = samples(store, "ref"), samples(store, "agent")
    after = samples(store, *[f"after-{h}" for h in cfg.calibration_harnesses])
    grid = ceiling.build_grid(reference, before, beta=0.0, k=cfg.ref_samples, harnesses=cfg.harnesses,
                              n_boot=cfg.n_boot, seed=cfg.seed, extra={"after": after})
    idx = [grid.harnesses.index(h) for h in cfg.calibration_harnesses]
    G = grid.harness_level("headroom")
    kappa = ceiling.fit_kappa(grid.harness_level("score_after")[idx] - grid.harness_level("score")[idx], G[idx])
    predicted = {h: ceiling.estimate(kappa * G[grid.harnesses.index(h)]) for h in cfg.candidates}
    if np.isfinite(kappa[0]):
        best, rule = max(cfg.candidates, key=lambda h: predicted[h].value), "highest predicted gain kappa (C - S)"
    else:  # no headroom in any calibration harness: kappa is undefined, the largest headroom is the best guess
        best = max(cfg.candidates, key=lambda h: G[grid.harnesses.index(h), 0])
        rule = "kappa undefined (no headroom in the calibration harnesses): largest headroom C - S"
    return {"harness": best, "rule": rule, "kappa": ceiling.estimate(kappa).as_dict(),
            "predicted": {h: e.as_dict() for h, e in predicted.items()}}


def _sealed_eval(cfg: HarnessTeacherConfig, seal: Any, sft_model: str, agent: tuple[str, str | None],
                 held_out: list[Any], store: RecordStore, reference: LazyPolicy, progress: Progress) -> dict[str, Any]:
    h = cfg.sealed_harness
    ref_ids = sample(cfg, sft_model, [h], held_out, cfg.ref_samples, "sealed-ref", store, reference, progress)
    agent_ids = sample(cfg, agent[0], [h], held_out, cfg.eval_samples, "sealed-agent", store, reference, progress,
                       adapter=agent[1])
    got = store.sql("SELECT run_id, avg(success::DOUBLE) AS s FROM episodes WHERE run_id IN ('sealed-ref', 'sealed-agent') "
                    "GROUP BY run_id").to_pylist()
    result = {r["run_id"]: r["s"] for r in got}
    write_sealed_eval(seal, store, ref_ids + agent_ids, result)
    return {"harness": h, "result": result, "episodes": len(ref_ids) + len(agent_ids), "eval_path": str(seal.eval_path)}


def analyze(cfg: HarnessTeacherConfig, store: RecordStore, chosen: str) -> dict[str, Any]:
    """Ceiling/score/headroom/mismatch per harness, every decomposition against the training harness,
    and the gain prediction for the chosen harness (kappa fitted on the calibration rounds)."""
    store.refresh()  # the RL runs committed their training episodes through their own RecordStore objects
    harnesses = [*cfg.harnesses, *([cfg.sealed_harness] if cfg.sealed_harness else [])]
    runs_ref = ["ref"] + (["sealed-ref"] if cfg.sealed_harness else [])
    runs_agent = ["agent"] + (["sealed-agent"] if cfg.sealed_harness else [])
    reference, agent = samples(store, *runs_ref), samples(store, *runs_agent)
    grid = ceiling.build_grid(reference, agent, beta=cfg.beta, k=cfg.ref_samples, harnesses=harnesses,
                              n_boot=cfg.n_boot, seed=cfg.seed)
    ref_grid = ceiling.build_grid(reference, None, beta=cfg.beta, k=cfg.ref_samples, harnesses=harnesses,
                                  n_boot=cfg.n_boot, seed=cfg.seed)
    decomp = [row for h in harnesses if h != cfg.train_harness for row in ceiling.decomposition(grid, cfg.train_harness, h)]
    afters = samples(store, *[f"after-{h}" for h in dict.fromkeys([*cfg.calibration_harnesses, chosen])])
    trained = list(dict.fromkeys([*cfg.calibration_harnesses, chosen]))
    gp = ceiling.gain_prediction(reference, samples(store, "agent"), afters, holdout=[chosen], harnesses=trained,
                                 k=cfg.ref_samples, n_boot=cfg.n_boot, seed=cfg.seed)
    g2 = ceiling.build_grid(reference, samples(store, "agent"), beta=0.0, k=cfg.ref_samples, harnesses=trained,
                            n_boot=cfg.n_boot, seed=cfg.seed, extra={"after": afters})
    G, dS = g2.harness_level("headroom"), g2.harness_level("score_after") - g2.harness_level("score")
    points = [{"harness": h, "role": "held out" if h == chosen else "fit kappa",
               **ceiling.estimate(G[i]).as_dict("headroom_"), **ceiling.estimate(dS[i]).as_dict("gain_")}
              for i, h in enumerate(g2.harnesses)]
    outcomes = store.sql(
        "SELECT run_id, harness_id, outcome, count(*) AS n FROM episodes WHERE run_id IN "
        "('ref', 'agent', 'sealed-ref', 'sealed-agent') GROUP BY ALL ORDER BY ALL").to_pylist()
    turns = store.sql(
        "SELECT run_id, harness_id, avg(num_turns) AS turns, avg(format_errors) AS format_errors FROM episodes "
        "WHERE run_id IN ('ref', 'agent', 'sealed-ref', 'sealed-agent') GROUP BY ALL ORDER BY ALL").to_pylist()
    training = store.sql(
        "SELECT run_id, avg(success::DOUBLE) AS solve_rate, count(*) AS episodes FROM episodes "
        "WHERE starts_with(run_id, 'train-') GROUP BY run_id ORDER BY run_id").to_pylist()
    return {"harness_table": ceiling.harness_table(grid), "reference_table": ceiling.harness_table(ref_grid),
            "decomposition": decomp, "gain": {"kappa": gp.kappa.as_dict(), "fit_on": gp.fit_on, "rows": gp.rows, "points": points},
            "outcomes": outcomes, "turns": turns, "training": training,
            "cells": ceiling.cell_table(grid)}
