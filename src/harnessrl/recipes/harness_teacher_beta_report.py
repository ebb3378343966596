"""The beta sweep's part of the study report: one figure, one table, and terminal lines.

Per beta (x axis, log scale): the agent's score and KL to the reference in the training harness
next to the exact optimum's (S*, KL*), the mismatch per harness (the optimum's is 0), and the
value correction the agent adds to the reference's log-odds next to the optimum's (Q*(a)-Q*(b))/beta.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np

C_OBS, C_PRED = "#3182bd", "#e6550d"


def _yerr(rows: list[dict], key: str) -> np.ndarray:
    v = np.array([r[key] for r in rows], dtype=float)
    lo = np.array([r[f"{key}_lo"] for r in rows], dtype=float)
    hi = np.array([r[f"{key}_hi"] for r in rows], dtype=float)
    return np.nan_to_num(np.clip(np.stack([v - lo, hi - v]), 0, None))


def _short(h: str) -> str:
    return h.split("-", 1)[1] if h.startswith("lookup-") else h


def figure_betas(res: dict) -> plt.Figure:
    rows, cfg = res["betas"]["rows"], res["cfg"]
    betas = np.array(res["betas"]["betas"], dtype=float)
    train = [r for r in rows if r["train"]]
    order = np.argsort(betas)
    train = [train[i] for i in order]
    x = betas[order]
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4))
    for ax, key, pred, label in ((axes[0], "score", "pred_score", "solve rate"),
                                 (axes[1], "kl_ref", "pred_kl", "KL to reference (nats / episode)")):
        ax.errorbar(x, [r[key] for r in train], yerr=_yerr(train, key), fmt="o-", color=C_OBS, capsize=3, label="agent")
        ax.errorbar(x * 1.04, [r[pred] for r in train], yerr=_yerr(train, pred), fmt="s--", color=C_PRED, capsize=3,
                    label="exact optimum (klcontrol)")
        ax.set_ylabel(label)
        ax.set_title(f"{_short(cfg.train_harness)} (training harness)", fontsize=9)
    ax = axes[2]
    for h in cfg.harnesses:
        hr = sorted((r for r in rows if r["harness"] == h), key=lambda r: r["beta"])
        ax.errorbar([r["beta"] for r in hr], [r["mismatch"] for r in hr], yerr=_yerr(hr, "mismatch"), fmt="o-",
                    capsize=2, lw=2 if h == cfg.train_harness else 0.8, label=_short(h))
    ax.axhline(0, color=C_PRED, ls="--", lw=1, label="optimum (0)")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_ylabel("mismatch KL(agent || pi*_h)")
    ax.set_title("mismatch per harness", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    ax = axes[3]
    shown = [h for h in cfg.harnesses if any(np.isfinite(r["pred_correction"]) for r in rows if r["harness"] == h)]
    for i, h in enumerate(shown or [cfg.train_harness]):
        hr = sorted((r for r in rows if r["harness"] == h), key=lambda r: r["beta"])
        bx = np.array([r["beta"] for r in hr])
        line = ax.errorbar(bx, [r["correction"] for r in hr], yerr=_yerr(hr, "correction"), fmt="o-", capsize=2,
                           label=f"{_short(h)} agent")
        ax.errorbar(bx * 1.04, [r["pred_correction"] for r in hr], yerr=_yerr(hr, "pred_correction"), fmt="s--",
                    capsize=2, color=line[0].get_color(), alpha=0.6, label=f"{_short(h)} optimum")
    ax.axhline(0, color="k", lw=0.5)
    ax.set_ylabel("value correction (nats)")
    ax.set_title("log-odds the agent adds to the reference's", fontsize=9)
    ax.legend(fontsize=6)
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(x, [f"{b:g}" for b in x])
        ax.minorticks_off()
        ax.set_xlabel("beta (KL weight in training = analysis beta)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def _ci(r: dict, key: str, fmt: str = "{:.3f}") -> str:
    if not np.isfinite(r[key]):
        return "n/a"
    return f"{fmt.format(r[key])} [{fmt.format(r[key + '_lo'])}, {fmt.format(r[key + '_hi'])}]"


def table_rows(res: dict) -> list[dict]:
    return [{"beta": r["beta"], "harness": _short(r["harness"]) + (" (train)" if r["train"] else ""),
             "agent score": _ci(r, "score"), "optimum score S*": _ci(r, "pred_score"),
             "KL(agent || ref)": _ci(r, "kl_ref", "{:.2f}"), "optimum KL*": _ci(r, "pred_kl", "{:.2f}"),
             "mismatch": _ci(r, "mismatch", "{:.2f}"),
             "log-odds ref / agent": f"{r['log_odds_reference']:.2f} / {r['log_odds_agent']:.2f}",
             "value correction": _ci(r, "correction", "{:+.2f}"),
             "optimum's correction": _ci(r, "pred_correction", "{:+.2f}"),
             "first actions (asked / other)": f"{r['episodes_better']} / {r['episodes_worse']}"}
            for r in sorted(res["betas"]["rows"], key=lambda r: (r["beta"], not r["train"]))]


def summary_lines(res: dict) -> list[str]:
    lines = []
    for r in sorted((r for r in res["betas"]["rows"] if r["train"]), key=lambda r: r["beta"]):
        lines.append(f"beta {r['beta']:g} in {_short(r['harness'])}: score {r['score']:.3f} (optimum {r['pred_score']:.3f}), "
                     f"KL {r['kl_ref']:.2f} (optimum {r['pred_kl']:.2f}), mismatch {r['mismatch']:.2f} "
                     f"[{r['mismatch_lo']:.2f}, {r['mismatch_hi']:.2f}]")
    return lines


def add_section(rep: Any, res: dict, number: int) -> None:
    cfg = res["cfg"]
    rep.section(f"{number}. The beta sweep: carried log-odds and mismatch vs the KL weight",
                f"One agent per beta in {', '.join(f'{b:g}' for b in res['betas']['betas'])}, each RL-trained from the "
                f"reference in {cfg.train_harness} ({cfg.agent_updates} updates, {cfg.objective}) with the KL term to the "
                f"reference at kl_coef = beta ({cfg.kl_estimator} as a loss term; adv_scale "
                f"{cfg.adv_scale}) and analysed at the same beta. Next to it, what the exact solver "
                "(analysis/klcontrol.py) predicts at that beta: the tilt pi_ref exp(R/beta)/Z of the reference's own "
                f"samples ({cfg.ref_samples} per task and harness) reaches score S* at KL* from the reference, with "
                "mismatch 0; its value correction on the contrast is (Q*(asked) - Q*(other))/beta, Q* the soft value "
                "of the reference episodes that began with that look (pooled over tasks; n/a where the reference "
                "began fewer than 5 episodes with one of them). Intervals: 95% bootstrap.")
    rep.figure(figure_betas(res), "Per beta: agent vs exact optimum in the training harness (score, KL), mismatch per "
               "harness, and the value correction added to the reference's log-odds (95% CI).", name="beta_sweep")
    rep.table(table_rows(res), caption="Per beta and harness: observed (agent) next to predicted (exact optimum)")
