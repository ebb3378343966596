"""The study's beta sweep: how the carried log-odds and the mismatch scale with the KL weight beta,
next to what the exact KL-control solver predicts at the same beta.

For each beta in `betas` an agent is RL-trained from the reference (the SFT model) in the
training harness with the KL term at that beta (`train_run(kl_coef=beta)`: the same loss,
estimator and unscaled rewards as the main agent), then sampled under every harness and scored
on the log-odds contrasts. The agent of the main study is reused where its kl_coef equals a
beta of the sweep. Every stage is resumable like the rest of the study (OUT/stages/beta-*.json,
OUT/models/agent-beta*/done.json).

Analysed at the same beta as it was trained with:
  observed   score, KL(agent || ref), mismatch (V* - J)/beta per harness (`ceiling.build_grid`);
             the agent's log-odds and value correction on the contrast (`preferences`);
  predicted  the exact optimum's score and KL (`analysis.beta_sweep.tilt_prediction`) and its
             value correction (Q*(a) - Q*(b))/beta from the reference episodes' first actions
             (`analysis.beta_sweep.predicted_correction`); the optimum's mismatch is 0.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from harnessrl.analysis import ceiling
from harnessrl.analysis.beta_sweep import predicted_correction, tilt_prediction
from harnessrl.records import RecordStore
from harnessrl.recipes.lm_base import LazyPolicy, samples
from harnessrl.recipes.stages import json_stage
from harnessrl.train.tasks import task_id

Progress = Callable[[str, int, int | None], None]


def run_id(beta: float) -> str:
    return f"beta-{beta:g}"


def beta_sweep(cfg: Any, out: Path, sft_model: str, agent: tuple[str, str | None], train: list[Any], held_out: list[Any],
               store: RecordStore, reference: LazyPolicy, progress: Progress) -> dict[str, Any]:
    """Train, sample and score one agent per beta (finished stages reused); returns what the report needs."""
    from harnessrl.recipes import harness_teacher as ht  # the recipe's own stages (it imports this module lazily)

    prefs: dict[str, list[dict]] = {}
    for b in cfg.betas:
        if b == cfg.train_kl_coef:  # the main agent was trained at this beta already
            agent_b = agent
        else:
            reference.release()  # the RL run loads its own model
            saved = ht.train_run(cfg, out, (sft_model, None), cfg.train_harness, cfg.agent_updates, f"agent-beta{b:g}",
                                 train, ht._direct(progress), kl_coef=b)
            agent_b = ht._model_and_adapter(cfg, sft_model, saved)
        rid = run_id(b)
        json_stage(out, f"{rid}-eval", lambda a=agent_b, rid=rid: {"ids": ht.sample(
            cfg, a[0], cfg.harnesses, held_out, cfg.eval_samples, rid, store, reference, progress, adapter=a[1])})
        prefs[rid] = json_stage(out, f"{rid}-preferences", lambda a=agent_b: {
            "rows": ht._preferences(cfg, a, reference, held_out)})["rows"]
    first = json_stage(out, "first-actions", lambda: first_action_returns(store, held_out, cfg.harnesses))
    return {"betas": list(cfg.betas), "rows": sweep_rows(cfg, store, prefs, first["returns"])}


def _object_of(tool_call: str, objects: set[str]) -> str | None:
    """The object a first turn looked at: an argument of its first parsed call that names an object."""
    try:
        calls = json.loads(tool_call) if tool_call else []
    except json.JSONDecodeError:
        return None
    if not calls or not isinstance(calls[0], dict):
        return None
    for v in (calls[0].get("args") or {}).values():
        if isinstance(v, str) and v.strip() in objects:
            return v.strip()
    return None


def first_action_returns(store: RecordStore, held_out: list[Any], harnesses: list[str]) -> dict[str, Any]:
    """Per harness, the returns of the reference's episodes whose first action looked at the asked
    object ("better") and at another object ("worse"): the contrast's two actions, pooled over tasks."""
    tasks = {task_id(t): t for t in held_out if hasattr(t, "target") and hasattr(t, "objects")}
    out = {h: {"better": [], "worse": []} for h in harnesses}
    for ep in store.episodes("run_id = 'ref'"):
        task, h = tasks.get(ep.context.task_id), ep.context.harness_id
        if task is None or h not in out or not ep.turns:
            continue
        obj = _object_of(ep.turns[0].tool_call, set(task.objects))
        if obj is not None:
            out[h]["better" if obj == task.target else "worse"].append(float(ep.reward))
    return {"returns": out}


def sweep_rows(cfg: Any, store: RecordStore, prefs: dict[str, list[dict]], first: dict[str, dict]) -> list[dict]:
    """One row per (beta, harness): observed (with 95% CIs) next to the solver's prediction at that beta."""
    reference = samples(store, "ref")
    rows = []
    for b in cfg.betas:
        rid = run_id(b)
        grid = ceiling.build_grid(reference, samples(store, rid), beta=b, k=cfg.ref_samples, harnesses=cfg.harnesses,
                                  n_boot=cfg.n_boot, seed=cfg.seed)
        obs = {r["harness"]: r for r in ceiling.harness_table(grid)}
        pred = {r["harness"]: r for r in tilt_prediction(reference, cfg.harnesses, b, n_boot=cfg.n_boot, seed=cfg.seed)}
        lo = {r["harness"]: r for r in prefs[rid]}
        for h in cfg.harnesses:
            o, p, q = obs[h], pred[h], lo.get(h, {})
            corr = predicted_correction(np.array(first[h]["better"]), np.array(first[h]["worse"]), b,
                                        n_boot=cfg.n_boot, seed=cfg.seed)
            row = {"beta": b, "harness": h, "train": h == cfg.train_harness}
            for key in ("score", "kl_ref", "mismatch", "soft_ceiling"):
                row.update({key: o[key], f"{key}_lo": o[f"{key}_lo"], f"{key}_hi": o[f"{key}_hi"]})
            for key in ("pred_score", "pred_kl"):
                row.update({key: p[key], f"{key}_lo": p[f"{key}_lo"], f"{key}_hi": p[f"{key}_hi"]})
            row.update({"log_odds_reference": q.get("log_odds_reference", float("nan")),
                        "log_odds_agent": q.get("log_odds_trained", float("nan")),
                        "correction": q.get("value_correction", float("nan")),
                        "correction_lo": q.get("value_correction_lo", float("nan")),
                        "correction_hi": q.get("value_correction_hi", float("nan")),
                        "carryover_slope": q.get("carryover_slope", float("nan")), **corr})
            rows.append(row)
    return rows
