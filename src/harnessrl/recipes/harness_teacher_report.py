"""The harness-teacher report (also the study's): ceilings and scores per harness, every cross-harness
difference split into ceiling and headroom change, predicted next to observed gain, the log-odds
the agent carries, the sealed harness, and a short terminal summary of the same numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from harnessrl.recipes.harness_teacher_config import CLAIM
from harnessrl.report.html import Report

C_CEIL, C_REF, C_AGENT, C_AFTER = "#9ecae1", "#bdbdbd", "#3182bd", "#e6550d"


def _err(rows: list[dict], key: str) -> np.ndarray:
    """(2, n) asymmetric error bars from value/lo/hi columns."""
    v = np.array([r[key] for r in rows])
    return np.clip(np.stack([v - np.array([r[f"{key}_lo"] for r in rows]), np.array([r[f"{key}_hi"] for r in rows]) - v]), 0, None)


#: the words of the headline, for a reader who has not read the paper (docs/study.md has the same list)
GLOSSARY = (
    ("ceiling (C)", "what a harness lets a policy near the reference reach: the reference policy's pass@k over k "
     "samples per task (hard ceiling); the soft ceiling is its beta log-mean-exp return."),
    ("score (S)", "the agent's solve rate in a harness."),
    ("headroom (G = C - S)", "how far the agent's score is below the harness's ceiling."),
    ("mismatch", "the KL divergence from the agent to the harness's KL-optimal policy: how badly the agent fits "
     "the harness; beta x mismatch is the return it loses to that misfit."),
    ("dS = dC - dG", "a score difference between two harnesses is the ceiling change minus the headroom change: "
     "less reachable (dC < 0), or reachable but fitted worse (dG > 0)."),
    ("kappa", "the fitted rate in dS = kappa (C - S): the share of the headroom one round of further training recovers."),
)


def _seconds(value: Any) -> str:
    """Stage times as 12.3, not 1e+01 (the table's significant-digit format rounds whole numbers away)."""
    return "–" if value is None else f"{float(value):.1f}"


def short(h: str) -> str:
    return h.split("-", 1)[1] if h.startswith("lookup-") else h


def headline(res: dict) -> dict[str, Any]:
    """The numbers a reader wants first (also the terminal summary)."""
    cfg, a = res["cfg"], res["analysis"]
    table = {r["harness"]: r for r in a["harness_table"]}
    train = table[cfg.train_harness]
    others = [r for h, r in table.items() if h not in (cfg.train_harness, cfg.sealed_harness)]  # sealed: its own line
    worst = min(others, key=lambda r: r["score"]) if others else None
    decomp = {(d["to"], d["term"].split()[-1]): d for d in a["decomposition"]}
    gain = a["gain"]["rows"][0] if a["gain"]["rows"] else None
    out: dict[str, Any] = {
        "train_harness": cfg.train_harness, "train_score": train["score"], "train_ceiling": train["hard_ceiling"],
        "chosen": res["choice"]["harness"], "kappa": res["choice"]["kappa"]["value"], "rule": res["choice"].get("rule", ""),
        "predicted_gain": gain and gain["predicted_gain"], "predicted_lo": gain and gain["predicted_lo"],
        "predicted_hi": gain and gain["predicted_hi"], "observed_gain": gain and gain["observed_gain"],
        "observed_lo": gain and gain["observed_lo"], "observed_hi": gain and gain["observed_hi"],
    }
    if worst is not None:
        h = worst["harness"]
        out.update(worst_harness=h, worst_score=worst["score"], worst_dS=decomp[(h, "dS")]["value"],
                   worst_dC=decomp[(h, "dC")]["value"], worst_dG=decomp[(h, "dG")]["value"])
    if res.get("sealed"):
        s = res["sealed"]["result"]
        out.update(sealed_harness=res["sealed"]["harness"], sealed_reference=s.get("sealed-ref"), sealed_agent=s.get("sealed-agent"))
    return out


def write_headline(res: dict, command: str) -> Path:
    """headline.json next to report.html: the headline numbers with the seed and command (what
    scripts/study_results.py averages over seeds); wall_s is this call's (a resumed study: only the rest)."""
    from harnessrl.fileio import atomic_write_text

    data = {**headline(res), "seed": res["cfg"].seed, "wall_s": res["wall_s"], "command": command}
    return atomic_write_text(Path(res["out"]) / "headline.json", json.dumps(data, indent=2, sort_keys=True) + "\n")


def summary_lines(res: dict) -> list[str]:
    h = headline(res)
    lines = [f"agent trained in {short(h['train_harness'])}: score {h['train_score']:.3f} (ceiling {h['train_ceiling']:.3f})"]
    if "worst_harness" in h:
        lines.append(f"hardest other harness {short(h['worst_harness'])}: score {h['worst_score']:.3f}; "
                     f"dS {h['worst_dS']:+.3f} = ceiling change {h['worst_dC']:+.3f} - headroom change {h['worst_dG']:+.3f}")
    if h["predicted_gain"] is not None:
        lines.append(f"further training in {short(h['chosen'])} ({h['rule']}; kappa {h['kappa']:.2f}): predicted "
                     f"{h['predicted_gain']:+.3f} [{h['predicted_lo']:+.3f}, {h['predicted_hi']:+.3f}], observed "
                     f"{h['observed_gain']:+.3f} [{h['observed_lo']:+.3f}, {h['observed_hi']:+.3f}]")
    if "sealed_harness" in h:
        lines.append(f"sealed unseen harness {short(h['sealed_harness'])}: reference {h['sealed_reference']:.3f}, "
                     f"agent {h['sealed_agent']:.3f}")
    if res.get("betas"):
        from harnessrl.recipes import harness_teacher_beta_report

        lines += harness_teacher_beta_report.summary_lines(res)
    return lines


# ----------------------------------------------------------------------------------------
# Figures


def figure_harnesses(res: dict) -> plt.Figure:
    """Hard ceiling, reference score and agent score per harness; the gap to the ceiling is the headroom."""
    rows, ref = res["analysis"]["harness_table"], {r["harness"]: r for r in res["analysis"]["reference_table"]}
    rrows = [ref[r["harness"]] for r in rows]
    x, w = np.arange(len(rows)), 0.27
    fig, ax = plt.subplots(figsize=(max(6.5, 1.05 * len(rows)), 3.4))
    ax.bar(x - w, [r["hard_ceiling"] for r in rows], w, yerr=_err(rows, "hard_ceiling"), color=C_CEIL, capsize=2,
           label=f"ceiling (reference pass@{res['cfg'].ref_samples})")
    ax.bar(x, [r["score"] for r in rrows], w, yerr=_err(rrows, "score"), color=C_REF, capsize=2, label="reference score")
    ax.bar(x + w, [r["score"] for r in rows], w, yerr=_err(rows, "score"), color=C_AGENT, capsize=2, label="agent score")
    labels = [short(r["harness"]) + ("\n(train)" if r["harness"] == res["cfg"].train_harness else
                                     "\n(sealed)" if r["harness"] == res["cfg"].sealed_harness else "") for r in rows]
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("solve rate")
    ax.legend(fontsize=7, ncol=3, loc="upper right")
    fig.tight_layout()
    return fig


def figure_decomposition(res: dict) -> plt.Figure:
    """For every harness vs the training harness: dS = dC - dG with CIs."""
    d = res["analysis"]["decomposition"]
    targets = list(dict.fromkeys(r["to"] for r in d))
    by = {(r["to"], r["term"].split()[-1]): r for r in d}
    x, w = np.arange(len(targets)), 0.27
    fig, ax = plt.subplots(figsize=(max(6.5, 1.05 * len(targets)), 3.2))
    for off, term, colour, label in ((-w, "dS", C_AGENT, "score change dS"), (0, "dC", C_CEIL, "ceiling change dC"),
                                     (w, "dG", C_AFTER, "headroom change dG")):
        rows = [by[(t, term)] for t in targets]
        vals = np.array([r["value"] for r in rows])
        err = np.clip(np.stack([vals - [r["lo"] for r in rows], np.array([r["hi"] for r in rows]) - vals]), 0, None)
        ax.bar(x + off, vals, w, yerr=err, color=colour, capsize=2, label=label)
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xticks(x, [short(t) for t in targets], fontsize=8)
    ax.set_ylabel(f"vs {short(res['cfg'].train_harness)}")
    ax.legend(fontsize=7, ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)  # above the bars
    fig.tight_layout()
    return fig


def figure_gain(res: dict) -> plt.Figure:
    """Left: observed gain vs headroom with the fitted line dS = kappa G. Right: predicted gains of the
    candidates (the chosen one with its observed gain)."""
    g, choice = res["analysis"]["gain"], res["choice"]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.4))
    pts = g["points"]
    for p in pts:
        held = p["role"] == "held out"
        ax.errorbar(p["headroom_value"], p["gain_value"],
                    xerr=[[p["headroom_value"] - p["headroom_lo"]], [p["headroom_hi"] - p["headroom_value"]]],
                    yerr=[[p["gain_value"] - p["gain_lo"]], [p["gain_hi"] - p["gain_value"]]],
                    fmt="s" if held else "o", color=C_AFTER if held else C_AGENT, capsize=2,
                    label=f"{short(p['harness'])} ({p['role']})")
    gmax = max([p["headroom_hi"] for p in pts] + [0.05])
    k = g["kappa"]
    xs = np.linspace(0, gmax * 1.05, 20)
    ax.plot(xs, k["value"] * xs, "k--", lw=0.8, label=f"dS = {k['value']:.2f} G (fit)")
    ax.fill_between(xs, k["lo"] * xs, k["hi"] * xs, color="k", alpha=0.08)
    ax.axhline(0, color="k", lw=0.4)
    ax.set_xlabel("headroom G = ceiling - score (before)")
    ax.set_ylabel("observed gain dS (one round)")
    ax.legend(fontsize=7)
    cands = list(choice["predicted"])
    vals = np.array([choice["predicted"][c]["value"] for c in cands])
    err = np.clip(np.stack([vals - [choice["predicted"][c]["lo"] for c in cands],
                            np.array([choice["predicted"][c]["hi"] for c in cands]) - vals]), 0, None)
    xb = np.arange(len(cands))
    bx.bar(xb - 0.2, vals, 0.4, yerr=err, capsize=2, color=[C_AFTER if c == choice["harness"] else C_REF for c in cands],
           label="predicted kappa G")
    for row in g["rows"]:
        i = cands.index(row["harness"])
        bx.errorbar(i + 0.2, row["observed_gain"], yerr=[[row["observed_gain"] - row["observed_lo"]],
                                                          [row["observed_hi"] - row["observed_gain"]]],
                    fmt="D", color="k", capsize=2, label="observed")
    bx.axhline(0, color="k", lw=0.4)
    bx.set_xticks(xb, [short(c) for c in cands], fontsize=8)
    bx.set_ylabel("gain of one round of further training")
    bx.legend(fontsize=7)
    fig.tight_layout()
    return fig


def figure_preferences(res: dict) -> plt.Figure:
    rows = res["preferences"]
    x, w = np.arange(len(rows)), 0.38
    fig, ax = plt.subplots(figsize=(max(6.5, 1.05 * len(rows)), 3.0))
    ax.bar(x - w / 2, [r["log_odds_reference"] for r in rows], w, color=C_REF, label="reference (SFT) log-odds")
    ax.bar(x + w / 2, [r["log_odds_trained"] for r in rows], w, color=C_AGENT, label="agent log-odds")
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xticks(x, [short(r["harness"]) for r in rows], fontsize=8)
    ax.set_ylabel("log p(asked obj) / p(other obj)")
    ax.legend(fontsize=7, ncol=2, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------
# Tables


def _ci(r: dict, key: str, fmt: str = "{:.3f}") -> str:
    return f"{fmt.format(r[key])} [{fmt.format(r[key + '_lo'])}, {fmt.format(r[key + '_hi'])}]"


def harness_rows(res: dict) -> list[dict]:
    ref = {r["harness"]: r for r in res["analysis"]["reference_table"]}
    return [{"harness": r["harness"], "ceiling (pass@k)": _ci(r, "hard_ceiling"), "soft ceiling": _ci(r, "soft_ceiling"),
             "reference score": _ci(ref[r["harness"]], "score"), "agent score": _ci(r, "score"),
             "headroom": _ci(r, "headroom"), "KL(agent || ref)": _ci(r, "kl_ref", "{:.2f}"),
             "mismatch": _ci(r, "mismatch", "{:.2f}")} for r in res["analysis"]["harness_table"]]


def outcome_rows(res: dict) -> list[dict]:
    piv: dict[tuple[str, str], dict] = {}
    for r in res["analysis"]["outcomes"]:
        row = piv.setdefault((r["run_id"], r["harness_id"]), {"policy": r["run_id"], "harness": r["harness_id"]})
        row[r["outcome"] or "none"] = r["n"]
    rows = list(piv.values())
    keys = sorted({k for r in rows for k in r} - {"policy", "harness"})
    return [{**{k: 0 for k in keys}, **r} for r in rows]


def held_out_note(cfg: Any, n: int) -> str:
    if cfg.held_out == "seeds":
        return f"{n} of them evaluated on pages (env seeds) training never drew"
    return f"{n} held-out tasks"


def build_report(res: dict, command: str, title: str | None = None) -> Path:
    cfg, a, out = res["cfg"], res["analysis"], Path(res["out"])
    params = res.get("parameters")
    rep = Report(title or "harness-teacher: what the training harness taught the agent", claim=CLAIM,
                 scale_note=f"{cfg.scale}: {cfg.model or 'a tiny LM built here'}"
                 f"{f' ({params:,} parameters)' if params else ''}, suite {cfg.suite}: {res['train_tasks']} training "
                 f"tasks, {held_out_note(cfg, res['eval_tasks'])}; {len(cfg.harnesses)} harnesses + sealed "
                 f"{cfg.sealed_harness}; {res['wall_s']:.0f} s wall.")
    rep.section("Headline")
    for line in summary_lines(res):
        rep.text(line)
    rep.section("Glossary")
    for term, meaning in GLOSSARY:
        rep.text(f"{term}: {meaning}")
    rep.section("1. Ceiling and score per harness",
                f"The reference (SFT) policy is sampled {cfg.ref_samples} times per task and harness: its pass@"
                f"{cfg.ref_samples} is the hard ceiling (what the harness lets a policy near the reference reach), "
                f"its beta log-mean-exp return the soft ceiling (beta = {cfg.beta}). The agent is RL-trained "
                f"({cfg.agent_updates} updates, {cfg.objective}, KL term to the reference at kl_coef = "
                f"{cfg.train_kl_coef:g} with {cfg.kl_estimator}; adv_scale {cfg.adv_scale}) in {cfg.train_harness} and sampled {cfg.eval_samples} "
                "times per task under every harness. Intervals: 95% bootstrap over samples within tasks.")
    rep.figure(figure_harnesses(res), "Ceiling, reference score and agent score per harness (95% CI).", name="harnesses")
    rep.table(harness_rows(res), caption="Per harness: ceiling, scores, headroom = ceiling - score, KL and mismatch "
              "(KL to the harness-optimal policy, from the stored reference log-probs)")
    rep.section("2. A cross-harness difference is ceiling change minus headroom change",
                f"For each harness vs {cfg.train_harness}: dS = dC - dG holds in every bootstrap replicate. A harness "
                "can lower the score because less is achievable in it (dC < 0) or because the agent fits it worse "
                "(dG > 0); a raw score comparison cannot tell which.")
    rep.figure(figure_decomposition(res), f"Score, ceiling and headroom change vs {cfg.train_harness} (95% CI).",
               name="decomposition")
    rep.table(a["decomposition"], caption="Every decomposition term (with beta: dJ = dV* - beta dM)")
    g, choice = a["gain"], res["choice"]
    rep.section("3. Predicted vs observed gain of further training",
                f"One round ({cfg.further_updates} updates) of further training in each calibration harness "
                f"({', '.join(cfg.calibration_harnesses)}) fits kappa in dS = kappa (C - S): kappa = "
                f"{choice['kappa']['value']:.3f} [{choice['kappa']['lo']:.3f}, {choice['kappa']['hi']:.3f}]. Chosen by "
                f"{choice.get('rule', 'highest predicted gain')}: {choice['harness']}, trained the same way; its "
                "observed gain is set next to the prediction made before it was trained.")
    rep.figure(figure_gain(res), "Left: observed gain vs headroom and the fitted line (band: kappa's CI). Right: predicted "
               "gains of the candidates; the chosen one with its observed gain.", name="gain_prediction")
    rep.table([{k: v for k, v in r.items()} for r in g["rows"]], caption="Held-out prediction (95% CI)")
    rep.table(g["points"], caption="Every further-trained harness: headroom before and gain after one round")
    rep.section("4. The preferences the agent carries",
                f"For each held-out state the agent's log-odds between {res['contrast'] or 'a better and a worse action'}, "
                "rendered in every harness's own syntax, next to the reference's. The value correction is the agent "
                "minus reference log-odds; carry-over is how much of the training harness's correction appears in "
                "each other harness.")
    if res["preferences"]:
        rep.figure(figure_preferences(res), "Log-odds of the right action vs a wrong one, reference and agent.", name="log_odds")
        rep.table(res["preferences"], caption="Log-odds per harness", digits=3)
    else:
        rep.note(f"No contrast is registered for the tasks of suite {cfg.suite} "
                 "(harnessrl.evaluate.contrasts.register_contrast adds one), so no log-odds were measured.")
    if res.get("sealed"):
        s = res["sealed"]
        rep.section("5. Sealed unseen harness",
                    f"{s['harness']} was sealed before any RL and evaluated once; the evaluation is recorded against "
                    f"its seal at `{s['eval_path']}` ({s['episodes']} episodes).")
        rep.table([{"policy": k, "solve rate": v} for k, v in s["result"].items()])
    if res.get("betas"):
        from harnessrl.recipes import harness_teacher_beta_report

        harness_teacher_beta_report.add_section(rep, res, 6)
    rep.section("Behaviour")
    rep.table(outcome_rows(res), caption="Outcomes per policy and harness (episodes)")
    rep.table(a["turns"], caption="Turns and format errors per episode", digits=3)
    rep.table(a["training"], caption="RL runs: solve rate over their training episodes", digits=3)
    stages = sorted((out / "stages").glob("*.json"))
    if stages:
        import json

        rep.table([{"stage": p.stem, "seconds": _seconds(json.loads(p.read_text()).get("seconds"))} for p in stages],
                  caption="Wall time of the sampling stages")
    # kl_coef None means "= beta": the report shows the weight the RL ran with, not the unset field
    rep.config({**cfg.model_dump(mode="json"), "kl_coef": cfg.train_kl_coef})
    rep.text(f"`kl_coef` is shown as trained: {cfg.train_kl_coef:g}"
             + (" (unset in the settings, so equal to beta)." if cfg.kl_coef is None else "."))
    rep.reproduce(command, seeds=cfg.seed, store=out / "store")
    rep.text(f"Re-analyse the records with `harnessrl analyze {out / 'store'} --reference lm:sft --policy lm:agent "
             "--where \"NOT starts_with(run_id, 'train-')\"` (training rollouts excluded).")
    return rep.write(out / "report.html")
