"""The BiPA audit as an HTML report: verdict, principles, replay, train vs test gain, reads, cost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from harnessrl.analysis.bipa import AuditResult
from harnessrl.report.html import Report

CLAIM = ("BiPA replays a skill optimizer's acceptance rule on identical candidates to isolate selection effects and "
         "records each episode as a bipartite graph of turns and the text they read; learned skills only marginally "
         "beat hand-written seeds, many gains vanish on test data, and optimizers add input tokens and turns.")


def _replay_figure(res: AuditResult) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(res.replays) + 2), 3.2))
    x = np.arange(len(res.replays))
    ax.bar(x - 0.2, [r.null_accept_rate for r in res.replays], 0.4, label="identical candidate (parent vs itself)", color="#999")
    ax.bar(x + 0.2, [r.candidate_accept_rate if r.accepted else 0 for r in res.replays], 0.4,
           label="the accepted candidate, replayed", color="#3b7ddd")
    pred = res.summary["false_accept_predicted"]
    if pred == pred:
        ax.axhline(pred, color="k", ls="--", lw=1, label=f"binomial model {pred:.2f}")
    ax.set_xticks(x, [f"{r.candidate_id}{'*' if r.accepted else ''}" for r in res.replays], fontsize=7, rotation=45)
    ax.set_ylim(0, 1)
    ax.set_ylabel("acceptance rate in replays")
    ax.set_xlabel("decision (* = accepted by the optimizer)")
    ax.legend(fontsize=8, loc="upper right")
    return fig


def _gain_figure(res: AuditResult) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(7, 3.2))
    e = res.edits
    x = np.arange(len(e))
    ax.bar(x - 0.27, [r["observed_gain"] for r in e], 0.27, label="observed (optimizer)", color="#e0a020")
    for off, key, color, name in ((0.0, "fresh_gain", "#3b7ddd", "fresh train (paired)"), (0.27, "test_gain", "#2a9d5c", "held-out test")):
        v = np.array([r[key] for r in e], float)
        lo, hi = np.array([r[key + "_lo"] for r in e], float), np.array([r[key + "_hi"] for r in e], float)
        ax.bar(x + off, v, 0.27, yerr=np.abs(np.vstack([v - lo, hi - v])), capsize=3, label=name, color=color)
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xticks(x, [f"{r['candidate']}\n{r['change'][:22]}" for r in e], fontsize=7)
    ax.set_ylabel("gain in success rate per task")
    ax.legend(fontsize=8)
    return fig


def _lineage_figure(res: AuditResult) -> plt.Figure:
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    L = res.lineage
    x = np.arange(len(L))
    a.plot(x, [r["fresh_train_mean"] for r in L], "o-", label="train (fresh seeds)")
    a.plot(x, [r["test_mean"] for r in L], "s-", label="held-out test")
    a.plot(x, [L[0]["fresh_train_mean"] + r["observed_train_gain"] for r in L], "^--", label="train, as the optimizer saw it")
    a.set_xticks(x, [r["candidate"] for r in L], fontsize=7)
    a.set_ylabel("success rate")
    a.set_title("accepted lineage", fontsize=9)
    a.legend(fontsize=7)
    b.plot(x, [r["skill_chars"] for r in L], "o-", color="#b04")
    b.set_ylabel("skill characters", color="#b04")
    b2 = b.twinx()
    b2.plot(x, [r["turns"] for r in L], "s--", color="#333")
    b2.set_ylabel("turns per episode")
    b.set_xticks(x, [r["candidate"] for r in L], fontsize=7)
    b.set_title("cost along the lineage", fontsize=9)
    fig.tight_layout()
    return fig


def _sections_figure(res: AuditResult) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(7, 0.4 * max(3, len(res.sections)) + 1))
    S = res.sections
    y = np.arange(len(S))
    ax.barh(y + 0.25, [s["episodes_in_context"] for s in S], 0.25, label="in context", color="#ccc")
    ax.barh(y, [s["episodes_read"] for s in S], 0.25, label="read (any signal)", color="#3b7ddd")
    ax.barh(y - 0.25, [s["episodes_acted_on"] for s in S], 0.25, label="acted on", color="#2a9d5c")
    ax.set_yticks(y, [s["section"] for s in S])
    ax.set_xlabel("episodes")
    ax.legend(fontsize=8)
    return fig


def audit_report(res: AuditResult, *, files: dict[str, Path] | None = None, config: Any = None,
                 reproduce: list[str] | None = None, store: str | None = None, scale_note: str | None = None) -> Report:
    s = res.summary
    rep = Report(f"BiPA audit of {res.run_id}", claim=CLAIM, scale_note=scale_note)
    rep.section("Verdict", s["verdict"])
    rep.table(res.principles, caption="Design principles", columns=["principle", "status", "why"])
    keys = ["rule", "minibatch_size", "iterations", "accepted", "accepted_real", "accepted_selection", "false_accept_rate",
            "false_accept_lo", "false_accept_hi", "false_accept_predicted", "false_accept_trials", "observed_train_gain",
            "fresh_train_gain", "fresh_train_lo", "fresh_train_hi", "test_gain", "test_lo", "test_hi",
            "extra_skill_chars_per_edit", "extra_skill_input_chars_per_edit", "extra_tokens_in_per_edit", "extra_turns_per_edit", "log_complete",
            "episodes_cited", "episodes_missing", "audit_episodes"]
    rep.table([{"quantity": k, "value": s[k]} for k in keys], caption="Summary")
    rep.section("Acceptance replay", "Each accepted decision's rule re-run on identical candidates (the parent against itself) "
                "and on the real pair, with independent evaluations. Identical candidates accepted = false accepts.")
    if res.replays:
        rep.figure(_replay_figure(res), "Acceptance rate in replays: identical candidate vs accepted candidate", name="replay")
    rep.section("Train gain vs test gain", "Observed gain (the optimizer's minibatch, per task), fresh paired re-evaluation on "
                "the train tasks, and the held-out test tasks; 95% bootstrap CIs over (task, seed) pairs. The lineage's "
                "`observed_train_gain` sums the accepted minibatch gains: what chaining the optimizer's own evidence claims.")
    if res.edits:
        rep.figure(_gain_figure(res), "Gain per accepted edit", name="gains")
        rep.table(res.edits, caption="Accepted edits", columns=["candidate", "change", "observed_gain", "null_accept_rate",
                  "candidate_accept_rate", "fresh_gain", "fresh_gain_lo", "fresh_gain_hi", "test_gain", "selection_share",
                  "verdict", "d_skill_chars", "d_skill_input_chars", "d_turns", "d_tokens_in", "changed_sections_read", "provenance"])
    rep.figure(_lineage_figure(res), "Accepted lineage: success and cost", name="lineage")
    rep.table(res.lineage, caption="Lineage vs the seed skill", columns=["candidate", "version", "observed_train_gain",
              "fresh_train_mean", "fresh_train_gain", "fresh_train_lo", "fresh_train_hi", "test_mean", "test_gain",
              "test_lo", "test_hi", "skill_chars", "skill_input_chars", "turns", "tokens_in"])
    rep.section("What the turns read", "Bipartite turn-text graph: a turn reads a text that is in its context and that it "
                "quotes (>= 8 words), references (section id / file path) or acts on (a code span in its executed tool call).")
    if res.sections:
        rep.figure(_sections_figure(res), "Skill sections: in context, read, acted on", name="sections")
        rep.table(res.sections, caption="Skill section usage")
    if files:
        rep.text("Graph exports: " + ", ".join(f"`{p}`" for p in files.values()))
    rep.table(res.decisions, caption="Every decision of the run")
    if config is not None:
        rep.config(config)
    if reproduce:
        rep.reproduce(*reproduce, seeds=s.get("audit_seed"), store=store)
    return rep
