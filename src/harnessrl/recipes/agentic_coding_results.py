"""OUT/results.json of the agentic-coding recipe: the run's measures as data, beside report.html.

Per external suite and harness (and all harnesses pooled): pass@1 of the base, the SFT model and
SFT+GSPO (pooled over the GSPO seeds, and each seed alone), each with a 95% bootstrap CI over
tasks, and the paired changes (GSPO - SFT, GSPO - base, SFT - base, bootstrapped over the tasks
both were evaluated on); agent steps on tasks solved both before and after; the failure-mode
table; the probe and the tasks GSPO trained on; per GSPO update the share of groups with mixed
outcomes; the warm start; wall time, peak memory, the settings and the command.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from harnessrl.episode import Episode
from harnessrl.evaluate.stats import Estimate, bootstrap_ci
from harnessrl.fileio import atomic_write_text
from harnessrl.records import RecordStore
from harnessrl.recipes.agentic_coding_episodes import probe_rows, stored
from harnessrl.recipes.agentic_coding_report import paired_change, per_task, steps_solved_both, tables

#: Per-update columns kept in results.json (either engine's rows carry a subset).
UPDATE_KEYS = ("update", "episodes", "signal_fraction", "solve_rate", "reward_mean", "kl", "loss", "turns_mean")


def _est(e: Estimate) -> dict[str, float]:
    return {"value": e.value, "lo": e.lo, "hi": e.hi, "tasks": e.n}


def _num(x: Any) -> Any:
    """JSON has no NaN: a measure with no episodes behind it is null."""
    return None if isinstance(x, float) and math.isnan(x) else x


def policy_episodes(res: dict[str, Any], store: RecordStore, suite: str) -> dict[str, list[Episode]]:
    """{policy: episodes on `suite`}: base, sft (warm-started runs), gspo (all seeds), gspo-s<seed>."""
    out = {"base": stored(store, res["before"].get(suite, []))}
    if res.get("sft_eval"):
        out["sft"] = stored(store, res["sft_eval"].get(suite, []))
    out["gspo"] = stored(store, res["after"].get(suite, []))
    for seed, by_suite in res["after_by_seed"].items():
        out[f"gspo-s{seed}"] = stored(store, by_suite.get(suite, []))
    return out


def pass_at_1(eps: dict[str, list[Episode]]) -> dict[str, Any]:
    """pass@1 [CI over tasks] per policy, and the paired changes of every GSPO policy against its start
    (the SFT model when warm-started) and the base, and of the SFT model against the base."""
    rates = {p: _est(bootstrap_ci(np.array(list(per_task(e).values())), seed=0)) for p, e in eps.items() if e}
    changes = {}
    starts = [s for s in ("sft", "base") if eps.get(s)]
    for p in (q for q in eps if q.startswith("gspo") and eps[q]):
        for s in starts:
            changes[f"{p} - {s}"] = _est(paired_change(eps[s], eps[p]))
    if eps.get("sft") and eps.get("base"):
        changes["sft - base"] = _est(paired_change(eps["base"], eps["sft"]))
    return {"pass@1": rates, "change": changes}


def suite_results(res: dict[str, Any], store: RecordStore, suite: str) -> dict[str, Any]:
    eps = policy_episodes(res, store, suite)
    by_harness = {"all": pass_at_1(eps)}
    for h in res["harnesses"]:
        by_harness[h] = pass_at_1({p: [e for e in v if e.context.harness_id == h] for p, v in eps.items()})
    steps = {f"{b} -> {a}": {k: _num(v) for k, v in steps_solved_both(eps[b], eps[a]).items()}
             for a in (q for q in eps if q.startswith("gspo")) for b in ("base", "sft") if b in eps}
    return {"tasks": res["suites"][suite], "by_harness": by_harness, "steps_on_tasks_solved_both": steps}


def build_results(res: dict[str, Any], command: str) -> dict[str, Any]:
    cfg, out = res["cfg"], Path(res["out"])
    store = RecordStore(out / "store")
    _, modes = tables(res)
    g = res["gspo"]
    updates = [{"seed": r.get("seed", 0), **{k: _num(r[k]) for k in UPDATE_KEYS if k in r}} for r in res["metrics"]]
    sft = {k: v for k, v in (res.get("sft") or {}).items() if k != "losses"} or None
    return {
        "claim": "GSPO with a LoRA adapter raises pass@1, cuts agent steps and failure modes (agentic-coding recipe)",
        "command": command,
        "model": cfg.model or "tiny LM built here",
        "trained_harnesses": list(cfg.harnesses), "evaluation_only_harnesses": list(cfg.eval_harnesses),
        "train_tasks": res["train_tasks"],
        "suites": {s: suite_results(res, store, s) for s in res["suites"]},
        "failure_modes": [{k: _num(v) for k, v in r.items()} for r in modes],
        "warm_start": sft,
        "probe": {"rule": g["rule"], "rows": probe_rows(g["probe"], g["why"]) if g.get("probe") else None,
                  "samples": (g.get("probe") or {}).get("samples")},
        "gspo": {"tasks": g["tasks"], "why": g["why"], "updates_per_seed": g["updates"], "seeds": list(cfg.rl_seeds),
                 "per_update": updates},
        "wall_s": res["wall_s"], "peak_rss_gb": res["peak_rss_gb"],
        "config": cfg.model_dump(mode="json"),
    }


def write_results(res: dict[str, Any], command: str) -> Path:
    path = Path(res["out"]) / "results.json"
    atomic_write_text(path, json.dumps(build_results(res, command), indent=2, default=float))
    return path
