"""The reward-tilt recipe's analysis: tilt-model predictions next to the observed outcome
frequencies, read back from the record store, and the paper's three claims judged on them."""

from __future__ import annotations

from typing import Any

import numpy as np

from harnessrl.analysis import tilt
from harnessrl.analysis.samples import Samples
from harnessrl.envs import drawer
from harnessrl.records import RecordStore

LABELS = list(drawer.OUTCOMES)


def analyse(store: RecordStore, run_id: str, runs: list[dict], optimizers: list[str], *, n_boot: int, seed: int) -> dict[str, Any]:
    """Every fine-tuning round's observed outcome frequencies next to the tilt model's prediction
    from the base samples (bootstrap CIs: n_boot draws from `seed`), and the paper's checks per optimiser."""
    samples = Samples.from_store(store, where=f"run_id = '{run_id}'")
    base = samples.where(policy="bc")
    gated = tilt.gate(base.reward, base.success)
    base_freq = tilt.observed_frequencies(base.outcome, LABELS)
    rows = []
    for run in runs:
        for rnd in run["rounds"]:
            ev = samples.where(policy=rnd["policy_id"])
            obs = tilt.observed_frequencies(ev.outcome, LABELS)
            r = {"learned": base.reward, "verified": gated, "control": np.zeros(len(base))}[run["kind"]]
            pred = tilt.predicted_frequencies(base.outcome, r, rnd["beta"], LABELS, contexts=base.level, n_boot=n_boot, seed=seed)
            fitted = tilt.fit_beta(base.outcome, r, np.array([o.value for o in obs]), LABELS, contexts=base.level) if run["kind"] != "control" else float("nan")
            for lab, o, p, b in zip(LABELS, obs, pred, base_freq):
                rows.append({"run": run["name"], "optimizer": run["optimizer"], "kind": run["kind"], "round": rnd["round"],
                             "beta": rnd["beta"], "kl_to_bc": rnd["kl_to_bc"], "outcome": lab,
                             "base": b.value, "observed": o.value, "observed_lo": o.lo, "observed_hi": o.hi,
                             "predicted": p.value, "predicted_lo": p.lo, "predicted_hi": p.hi,
                             "fitted_beta": fitted, "ess": rnd["ess"], "n": o.n})
    return {
        "base_frequencies": {lab: e for lab, e in zip(LABELS, base_freq)},
        "reward_by_outcome": tilt.reward_by_outcome(base.outcome, base.reward, LABELS),
        "rows": rows,
        "optimizers": optimizers,
        "checks_by_optimizer": {opt: checks([r for r in rows if r["optimizer"] == opt], base_freq) for opt in optimizers},
        "checks": {f"{opt}: {claim}": holds for opt in optimizers
                   for claim, holds in checks([r for r in rows if r["optimizer"] == opt], base_freq).items()},
    }


def checks(rows: list[dict], base_freq: list) -> dict[str, bool]:
    """The paper's three claims, each judged on the last round by non-overlapping 95% intervals (one optimiser's rows)."""
    base = dict(zip(LABELS, base_freq))

    def last(kind: str, run: str | None = None) -> dict[str, dict]:
        sel = [r for r in rows if r["kind"] == kind and (run is None or r["run"] == run)]
        if not sel:
            return {}
        k = max(r["round"] for r in sel)
        return {r["outcome"]: r for r in sel if r["round"] == k}

    def rose(r: dict, lab: str) -> bool:
        return r[lab]["observed_lo"] > base[lab].hi

    out: dict[str, bool] = {}
    learned_runs = sorted({r["run"] for r in rows if r["kind"] == "learned"})
    for i, name in enumerate(learned_runs):
        fin = last("learned", name)
        key = "learned reward: success and wrong-object both rise" if i == 0 else f"re-optimisation (seed {name.rsplit('-s', 1)[1]}): both rise again"
        out[key] = rose(fin, "success") and rose(fin, "wrong_object")
    fin = last("verified")
    if fin:
        out["verifier: wrong-object falls below base, success rises"] = fin["wrong_object"]["observed_hi"] < base["wrong_object"].lo and rose(fin, "success")
    for name in learned_runs[:1]:
        fin = last("learned", name)
        out["tilt model: observed wrong-object within the predicted interval (last round)"] = (
            fin["wrong_object"]["observed_lo"] <= fin["wrong_object"]["predicted_hi"] and fin["wrong_object"]["predicted_lo"] <= fin["wrong_object"]["observed_hi"]
        )
    return out
