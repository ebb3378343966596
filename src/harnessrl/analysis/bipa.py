"""BiPA: audit a skill-optimizer run from its log and its records.

    log = read_log(run_dir)                                # hash-chained decisions (verified)
    ev = SkillEvaluator(policy, harness_spec, tasks, run_id=log.run_id + "-audit", store=store)
    rollouts = audit_rollouts(log, ev, cfg)                # harnessrl.evaluate.skill_audit: the I/O
    result = audit(log, store, rollouts, cfg)              # this module: pure, from records and episodes

1. Completeness: the log verifies, ended, and every episode it cites is in the store.
2. Acceptance replay (bipa_replay scores it): each accepted decision's rule re-run R times on identical
   candidates (the parent against itself) and on the real pair -> the false-accept rate, with
   the exact Poisson-binomial prediction from the replayed per-task success rates.
3. Fresh re-evaluation: every skill on the accepted lineage on train and held-out test tasks,
   common fresh seeds. Per accepted edit, fresh gain = paired mean(child - parent) with a
   bootstrap CI; an edit is `real` iff the CI's lower end is > 0, `harmful` iff its upper end
   is < 0, else `selection` (its observed gain is not distinguishable from what identical
   candidates show);
   selection share = clip(1 - fresh gain / observed gain, 0, 1).
4. Read provenance: the bipartite turn-text graph (bipa_graph) of fresh episodes; an edit has
   provenance iff a section it added or modified is read by the child's turns, or a section
   it removed was read by the parent's.
5. Cost: per accepted edit, change in skill characters, skill characters read per episode
   (skill length x turns: the skill is in every turn's context, so this counts for policies
   without token counts too), recorded input tokens and turns per episode; and
   (final - seed) / number of accepted edits.
6. Principles: held-out acceptance, replay-controlled selection, cost accounting, read
   provenance — each `ok` or `violated` with the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as sps

from harnessrl.analysis.bipa_graph import ReadRule, episode_graph, export_graph, section_usage
from harnessrl.analysis.bipa_replay import ReplayResult, score_replay
from harnessrl.evaluate.acceptance import AcceptanceConfig, accept_probability
from harnessrl.evaluate.skill_audit import AuditConfig, AuditRollouts  # the config lives with the rollouts it sizes
from harnessrl.evaluate.skill_runs import SkillRunLog
from harnessrl.fileio import atomic_write_text
from harnessrl.harness.skills import Skill


@dataclass
class AuditResult:
    run_id: str
    rule: str
    summary: dict[str, Any]
    decisions: list[dict[str, Any]]
    edits: list[dict[str, Any]]
    lineage: list[dict[str, Any]]
    sections: list[dict[str, Any]]
    principles: list[dict[str, Any]]
    replays: list[ReplayResult] = field(repr=False, default_factory=list)
    graph: Any = field(repr=False, default=None)

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "rule": self.rule, "summary": self.summary, "decisions": self.decisions,
                "edits": self.edits, "lineage": self.lineage, "sections": self.sections, "principles": self.principles,
                "replays": [{"candidate_id": r.candidate_id, "null_accepts": r.null_accepts.tolist(), "null_gains": r.null_gains.tolist(),
                             "candidate_accepts": r.candidate_accepts.tolist(), "candidate_gains": r.candidate_gains.tolist()}
                            for r in self.replays]}

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"json": out / "audit.json"}
        atomic_write_text(paths["json"], json.dumps(self.to_json(), indent=1, default=float))
        if self.graph is not None:
            paths["graphml"] = export_graph(self.graph, out / "read_graph.graphml")
            paths["graph_json"] = export_graph(self.graph, out / "read_graph.json")
        return paths


def binomial_ci(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    if n == 0:
        return float("nan"), float("nan")
    ci = sps.binomtest(k, n).proportion_ci(confidence, method="exact")
    return float(ci.low), float(ci.high)


def section_diff(parent: Skill, child: Skill) -> dict[str, list[str]]:
    p, c = {s.id: s for s in parent.sections}, {s.id: s for s in child.sections}
    return {"added": [i for i in c if i not in p], "removed": [i for i in p if i not in c],
            "modified": [i for i in c if i in p and (c[i].text != p[i].text or c[i].title != p[i].title)],
            "reordered": [i for i in c if i in p] != [i for i in p if i in c]}


def check_store(log: SkillRunLog, store: Any) -> dict[str, Any]:
    """Every episode the log cites must be in the store under the run's id."""
    want = set(log.episode_ids())
    have = set(store.sql("SELECT episode_id FROM episodes WHERE run_id = ?", [log.run_id]).column("episode_id").to_pylist()) if want else set()
    return {"log_complete": log.complete, "episodes_cited": len(want), "episodes_missing": len(want - have)}


# ---------------------------------------------------------------------------------------


def audit(log: SkillRunLog, store: Any, rollouts: AuditRollouts, cfg: AuditConfig = AuditConfig()) -> AuditResult:
    """The audit of one optimizer log from its records and the audit's rollouts (no rollouts here).

    rollouts: harnessrl.evaluate.skill_audit.audit_rollouts(log, ev, cfg) for the same log and cfg.
    """
    acc = AcceptanceConfig.model_validate(log.header["config"]["acceptance"])
    tasks = log.header["tasks"]
    rule = ReadRule(cfg.quote_words, cfg.min_span_chars)
    integrity = check_store(log, store)
    skills = {c: log.skill(c) for c in rollouts.lineage_ids}  # the accepted lineage, seed first

    # 2. acceptance replay: full replays of accepted decisions, null-only replays of the others
    replays: list[ReplayResult] = [score_replay(acc, p, eps) for p, eps in zip(rollouts.plans, rollouts.replays)]
    false_accepts = false_accept_summary(acc, log, replays)

    # 3. fresh re-evaluation of the lineage (common random numbers), 4. the read graph over every
    # fresh episode and the optimizer's own
    fresh_train, fresh_test = rollouts.fresh["train"], rollouts.fresh.get("test")
    by_version = {s.version: s for s in skills.values()} | log.skills_by_version()
    fresh_eps = [e for f in (fresh_train, fresh_test) if f for es in f.episodes.values() for e in es]
    run_eps = store.episodes(f"run_id = '{log.run_id}'") if integrity["episodes_cited"] else []
    graph = episode_graph(run_eps + fresh_eps, by_version, rule)
    usage = section_usage(run_eps + fresh_eps, by_version, rule)
    read_by_version = {v: {u["section"] for u in section_usage(eps, by_version, rule) if u["episodes_read"] > 0}
                       for v, eps in fresh_train.episodes.items()}

    edits = edit_rows(log, skills, replays, fresh_train, fresh_test, read_by_version)
    lineage = lineage_rows(rollouts.lineage_ids, skills, edits, fresh_train, fresh_test)
    decisions = [{"iteration": d["iteration"], "candidate": d["candidate_id"], "parent": d["parent_id"],
                  "operator": log.candidates[d["candidate_id"]]["operator"], "change": log.candidates[d["candidate_id"]]["description"],
                  "parent_score": d["parent_score"], "candidate_score": d["candidate_score"], "accepted": d["accepted"], "reason": d["reason"]}
                 for d in log.decisions]
    summary = {**integrity, "rule": acc.rule, "minibatch_size": acc.minibatch_size, "iterations": len(log.decisions),
               **edit_counts(edits), **false_accepts, **lineage_summary(lineage, len(edits)),
               "audit_episodes": rollouts.n_episodes, "audit_seed": rollouts.seed}
    summary["verdict"] = verdict_text(summary, edits)
    principles = check_principles(acc, tasks["train"], tasks["validation"], summary, edits, cfg.max_false_accept)
    return AuditResult(log.run_id, acc.rule, summary, decisions, edits, lineage, usage, principles, replays, graph)


def false_accept_summary(acc: AcceptanceConfig, log: SkillRunLog, replays: list[ReplayResult]) -> dict[str, Any]:
    """How often identical candidates were accepted in the replays, with the binomial model's prediction
    (each task's success rate under each parent pooled over all replays)."""
    null = np.concatenate([r.null_accepts for r in replays]) if replays else np.zeros(0, bool)
    fa_lo, fa_hi = binomial_ci(int(null.sum()), int(null.size))
    pooled: dict[tuple[str, str], list[float]] = {}
    for r in replays:
        for t, xs in r.parent_successes.items():
            pooled.setdefault((r.parent_version, t), []).extend(xs)
    predicted, weights = [], []
    decided = {d["candidate_id"]: d for d in log.decisions}
    for r in replays:
        p_hat = np.array([np.mean(pooled[(r.parent_version, t)]) for t in r.task_ids]).clip(0, 1)
        bar = float(decided[r.candidate_id]["parent_score"]) if acc.role == "validation" else None
        predicted.append(accept_probability(acc, p_hat, parent_score=bar))
        weights.append(len(r.null_accepts))
    return {"false_accept_rate": float(null.mean()) if null.size else float("nan"), "false_accept_lo": fa_lo,
            "false_accept_hi": fa_hi, "false_accept_trials": int(null.size),
            "false_accept_predicted": float(np.average(predicted, weights=weights)) if predicted else float("nan")}


def edit_rows(log: SkillRunLog, skills: dict[str, Skill], replays: list[ReplayResult], fresh_train: Any, fresh_test: Any,
              read_by_version: dict[str, set[str]]) -> list[dict[str, Any]]:
    """One row per accepted edit: observed vs fresh gain, its verdict, cost and read provenance."""
    replay_of = {r.candidate_id: r for r in replays if r.accepted}
    edits = []
    for d in log.accepted():
        par, chi = skills[d["parent_id"]], skills[d["candidate_id"]]
        r = replay_of[d["candidate_id"]]
        g = fresh_train.gain(chi.version, par.version, seed=0)
        tg = fresh_test.gain(chi.version, par.version, seed=0) if fresh_test else None
        diff = section_diff(par, chi)
        changed_read = sorted((set(diff["added"]) | set(diff["modified"])) & read_by_version.get(chi.version, set())
                              | set(diff["removed"]) & read_by_version.get(par.version, set()))
        ob = r.observed_gain
        edits.append({
            "candidate": d["candidate_id"], "parent": d["parent_id"], "iteration": d["iteration"],
            "operator": log.candidates[d["candidate_id"]]["operator"], "change": log.candidates[d["candidate_id"]]["description"],
            "observed_gain": ob, "null_accept_rate": r.null_accept_rate, "candidate_accept_rate": r.candidate_accept_rate,
            "null_gain_given_accept": r.null_gain_given_accept,
            "fresh_gain": g.value, "fresh_gain_lo": g.lo, "fresh_gain_hi": g.hi,
            "test_gain": tg.value if tg else float("nan"), "test_gain_lo": tg.lo if tg else float("nan"), "test_gain_hi": tg.hi if tg else float("nan"),
            "selection_share": float(np.clip(1 - g.value / ob, 0, 1)) if ob > 0 else float("nan"),
            "verdict": "real" if g.lo > 0 else ("harmful" if g.hi < 0 else "selection"),
            "d_skill_chars": len(chi.render()) - len(par.render()),
            # the skill is in every turn's context: characters of skill read per episode
            "d_skill_input_chars": len(chi.render()) * float(fresh_train.turns[chi.version].mean())
            - len(par.render()) * float(fresh_train.turns[par.version].mean()),
            "d_tokens_in": fresh_train.delta("tokens_in", chi.version, par.version),
            "d_turns": fresh_train.delta("turns", chi.version, par.version),
            "sections_added": ",".join(diff["added"]), "sections_removed": ",".join(diff["removed"]),
            "sections_modified": ",".join(diff["modified"]), "changed_sections_read": ",".join(changed_read),
            "provenance": bool(changed_read),
        })
    return edits


def lineage_rows(lineage_ids: list[str], skills: dict[str, Skill], edits: list[dict[str, Any]], fresh_train: Any,
                 fresh_test: Any) -> list[dict[str, Any]]:
    """Each accepted skill vs the seed: the gain the optimizer saw (cumulative) and the fresh one."""
    s0 = skills[lineage_ids[0]].version
    observed_cum = np.cumsum([0.0] + [e["observed_gain"] for e in edits])
    lineage = []
    for k, c in enumerate(lineage_ids):
        v = skills[c].version
        tr = fresh_train.gain(v, s0)
        te = fresh_test.gain(v, s0) if fresh_test else None
        lineage.append({"candidate": c, "version": v, "observed_train_gain": float(observed_cum[k]),
                        "fresh_train_mean": fresh_train.mean(v), "fresh_train_gain": tr.value, "fresh_train_lo": tr.lo, "fresh_train_hi": tr.hi,
                        "test_mean": fresh_test.mean(v) if fresh_test else float("nan"),
                        "test_gain": te.value if te else float("nan"), "test_lo": te.lo if te else float("nan"), "test_hi": te.hi if te else float("nan"),
                        "skill_chars": len(skills[c].render()), "tokens_in": float(fresh_train.tokens_in[v].mean()),
                        "skill_input_chars": len(skills[c].render()) * float(fresh_train.turns[v].mean()),
                        "turns": float(fresh_train.turns[v].mean())})
    return lineage


def edit_counts(edits: list[dict[str, Any]]) -> dict[str, int]:
    return {"accepted": len(edits), "accepted_real": sum(e["verdict"] == "real" for e in edits),
            "accepted_selection": sum(e["verdict"] == "selection" for e in edits),
            "accepted_harmful": sum(e["verdict"] == "harmful" for e in edits)}


def lineage_summary(lineage: list[dict[str, Any]], n_acc: int) -> dict[str, float]:
    """Final vs seed skill: observed and fresh train gain, test gain, and the cost per accepted edit."""
    final, first = lineage[-1], lineage[0]
    per_edit = lambda key: (final[key] - first[key]) / n_acc if n_acc else 0.0  # noqa: E731
    return {
        "observed_train_gain": final["observed_train_gain"], "fresh_train_gain": final["fresh_train_gain"],
        "fresh_train_lo": final["fresh_train_lo"], "fresh_train_hi": final["fresh_train_hi"],
        "test_gain": final["test_gain"], "test_lo": final["test_lo"], "test_hi": final["test_hi"],
        "seed_train_mean": first["fresh_train_mean"], "final_train_mean": final["fresh_train_mean"],
        "seed_test_mean": first["test_mean"], "final_test_mean": final["test_mean"],
        "extra_skill_chars_per_edit": per_edit("skill_chars"), "extra_tokens_in_per_edit": per_edit("tokens_in"),
        "extra_skill_input_chars_per_edit": per_edit("skill_input_chars"), "extra_turns_per_edit": per_edit("turns"),
    }


def verdict_text(s: dict[str, Any], edits: list[dict[str, Any]]) -> str:
    fa = f"identical candidates were accepted in {s['false_accept_rate']:.0%} of {s['false_accept_trials']} replays (binomial model: {s['false_accept_predicted']:.0%})"
    if not edits:
        return f"No rewrite was accepted; {fa}."
    if s["accepted_selection"] == len(edits):
        return (f"All {len(edits)} accepted gains are selection noise: fresh paired re-evaluation shows no gain "
                f"distinguishable from zero for any of them, and {fa}.")
    harm = f", {s['accepted_harmful']} made the skill worse (fresh gain CI below zero)" if s["accepted_harmful"] else ""
    return (f"{s['accepted_real']} of {len(edits)} accepted gains are real (fresh gain CI above zero), "
            f"{s['accepted_selection']} are selection noise{harm}; {fa}.")


def check_principles(acc: AcceptanceConfig, train: list[str], validation: list[str], s: dict[str, Any],
                     edits: list[dict[str, Any]], max_false_accept: float = 0.05) -> list[dict[str, Any]]:
    out = []
    held = acc.role == "validation" and not set(validation) & set(train)
    out.append({"principle": "held-out acceptance", "status": "ok" if held else "violated",
                "why": ("decisions use validation tasks disjoint from the train tasks" if held else
                        f"rule {acc.rule!r} decides on " + ("train minibatches the candidates are tuned on" if acc.role == "minibatch"
                                                            else "validation tasks that overlap the train tasks"))})
    sel = [e["candidate"] for e in edits if e["verdict"] != "real"]
    flag = s["false_accept_lo"] > max_false_accept
    ok = not sel
    why = (f"accepted {', '.join(sel)} without a fresh gain above zero" if sel else "every accepted gain survives fresh paired re-evaluation")
    why += f"; the rule accepts identical candidates at {s['false_accept_rate']:.0%} [{s['false_accept_lo']:.0%}, {s['false_accept_hi']:.0%}]"
    why += " (above the allowed rate)" if flag else ""
    out.append({"principle": "replay-controlled selection", "status": "ok" if ok else "violated", "why": why})
    costly = [e["candidate"] for e in edits if e["verdict"] != "real" and (e["d_skill_chars"] > 0 or e["d_skill_input_chars"] > 0 or e["d_turns"] > 0 or e["d_tokens_in"] > 0)]
    out.append({"principle": "cost accounting", "status": "violated" if costly else "ok",
                "why": (f"{', '.join(costly)} added input or turns without a measured gain" if costly
                        else f"no accepted edit adds cost without a gain; {s['extra_skill_chars_per_edit']:+.0f} skill chars, "
                             f"{s['extra_turns_per_edit']:+.2f} turns per accepted edit")})
    blind = [e["candidate"] for e in edits if not e["provenance"]]
    out.append({"principle": "read provenance", "status": "violated" if blind else "ok",
                "why": (f"{', '.join(blind)} changed only text no turn read" if blind
                        else "every accepted edit changed a section that turns read or acted on")})
    return out

