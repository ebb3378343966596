"""The multi-harness report's cross-harness pieces for one model: the ceiling decomposition and the
share of advantage groups with mixed outcomes.

Ceiling decomposition (analysis/ceiling.py, beta = 0): the start model sampled `ref_samples`
times per held-out task through every harness gives each harness's hard ceiling C_h (pass@k of
those samples) for that model; each policy's greedy held-out pass@1 is its score S_h; headroom
G_h = C_h - S_h is how far the policy sits below what the harness lets this model reach (the hard
form of the mismatch M_h, which needs the policy's sampled log-probs). A score difference between
two harnesses is then split exactly into ceiling change minus headroom change:
S2 - S1 = (C2 - C1) - (G2 - G1), with two-level bootstrap CIs (tasks, then episodes).

Mixed outcomes: a group whose episodes all got the same reward has zero advantage, so a model
that solves nothing (or everything) gives RL no gradient whatever the grouping rule.
"""

from __future__ import annotations

from typing import Any

from harnessrl.analysis import ceiling
from harnessrl.records import RecordStore
from harnessrl.recipes.lm_base import samples
from harnessrl.report.html import Report

TERMS = ("score change  dS", "ceiling change  dC", "headroom change  dG")


def decomposition(store: RecordStore, groups: dict[str, list[str]], harnesses: list[str], base: str, k: int,
                  n_boot: int = 1000) -> dict[str, Any]:
    """Per policy group: ceiling, score and headroom per harness, and each harness's score
    difference from `base` split into ceiling change minus headroom change."""
    store.refresh()
    reference = samples(store, "ref", "sealed-ref")
    tables, rows = [], []
    for g, keys in groups.items():
        pol = samples(store, *[f"eval-{k_}" for k_ in keys], *[f"sealed-{k_}" for k_ in keys])
        if not len(pol):
            continue
        grid = ceiling.build_grid(reference, pol, beta=0.0, k=k, harnesses=harnesses, n_boot=n_boot, seed=0)
        for r in ceiling.harness_table(grid):
            tables.append({"policy": g, "harness": r["harness"], "tasks": r["tasks"],
                           **{q: (r[q], r[f"{q}_lo"], r[f"{q}_hi"]) for q in ("hard_ceiling", "score", "headroom")}})
        for h in harnesses:
            if h != base:
                rows += [{"policy": g, **d} for d in ceiling.decomposition(grid, base, h) if d["term"] in TERMS]
    return {"harness_table": tables, "rows": rows, "base": base, "k": k}


def _ci(v: tuple[float, float, float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def ceiling_section(rep: Report, dec: dict[str, Any], label: dict[str, str], sealed: str) -> None:
    rep.section("Ceiling decomposition across harnesses (same start model)", (
        f"The start model sampled {dec['k']} times per held-out task through every harness (temperature of RL) gives "
        "each harness's hard ceiling C (pass@k) for this model; S is a policy's greedy held-out pass@1, headroom "
        "G = C - S (the hard form of the mismatch). A harness's score difference from "
        f"{dec['base']} is split exactly: dS = dC - dG (95% CIs: tasks, then episodes, resampled). A difference "
        "carried by dC is the harness (what the model can reach through it); one carried by dG is the policy."))
    rep.table([{"policy": label.get(r["policy"], r["policy"]), "harness": r["harness"] + (" (sealed)" if r["harness"] == sealed else ""),
                "tasks": r["tasks"], "ceiling C": _ci(r["hard_ceiling"]), "score S": _ci(r["score"]),
                "headroom G": _ci(r["headroom"])} for r in dec["harness_table"]], caption="ceiling, score, headroom [95% CI]")
    rep.table([{"policy": label.get(r["policy"], r["policy"]), "from": r["from"], "to": r["to"], "term": r["term"],
                "value": f"{r['value']:+.3f} [{r['lo']:+.3f}, {r['hi']:+.3f}]"} for r in dec["rows"]],
              caption=f"score difference from {dec['base']} = ceiling change - headroom change")


def mixed_outcomes(results: list[dict[str, Any]], rules: list[str]) -> list[dict[str, Any]]:
    """Per grouping rule: advantage groups in all updates, how many had mixed outcomes, the share.
    An engine that logs only the share per update (TRL: 1 - frac_reward_zero_std) gives the mean share."""
    rows = []
    for rule in rules:
        ms = [m for r in results if r["rule"] == rule for m in r["metrics"]]
        counted = bool(ms) and all("groups" in m for m in ms)
        groups = sum(int(m["groups"]) for m in ms) if counted else None
        mixed = sum(round(m["signal_fraction"] * m["groups"]) for m in ms) if counted else None
        share = (mixed / groups if groups else float("nan")) if counted else \
            (sum(m["signal_fraction"] for m in ms) / len(ms) if ms else float("nan"))
        rows.append({"rule": rule, "updates": len(ms), "groups": groups, "mixed outcomes": mixed, "share mixed": share})
    return rows


def mixed_text(rows: list[dict[str, Any]]) -> str:
    parts = [f"{r['rule']}: {r['mixed outcomes']} of {r['groups']} groups ({r['share mixed']:.1%})" if r["groups"] is not None
             else f"{r['rule']}: {r['share mixed']:.1%} of groups (mean over updates)" for r in rows]
    text = "Groups with mixed outcomes (not every episode the same reward; only these carry a gradient): " + "; ".join(parts) + "."
    if rows and all(r["share mixed"] == 0 for r in rows):
        text += (" No group had mixed outcomes: the start model solved every training task either never or always "
                 "through these harnesses, so every advantage was 0 and RL changed nothing; a Within vs Cross "
                 "comparison needs a start model that solves some tasks sometimes (a stronger warm start).")
    return text
