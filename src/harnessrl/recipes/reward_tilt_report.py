"""The reward-tilt recipe's HTML report: predicted next to observed outcome frequencies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from harnessrl.recipes.reward_tilt import LABELS
from harnessrl.report.html import Report

COLOURS = {"success": "#2a9d47", "wrong_object": "#d1495b", "miss": "#8d8d8d"}
CLAIM = (
    "Fine-tuning a diffusion policy on drawer opening with a learned visual reward raises success and "
    "wrong-object failures together; the same happens when re-optimising with the same reward. A tilt model "
    "— outcomes with higher initial expected reward become more frequent under KL-regularised optimisation — "
    "explains it, and gating the reward with an outcome verifier redirects the policy to the correct drawer."
)


def _rows(res: dict, **match: Any) -> list[dict]:
    return [r for r in res["rows"] if all(r[k] == v for k, v in match.items())]


OPTIMIZER_NAMES = {"ppo": "PPO over the denoising chain", "rwr": "reward-weighted regression"}


def figure_per_beta(res: dict, opt: str) -> plt.Figure:
    """One optimiser's runs. Rows: learned reward, verifier-gated; columns: rounds; bars: predicted vs observed."""
    kinds = [k for k in ("learned", "verified") if _rows(res, kind=k, optimizer=opt)]
    first = {k: sorted({r["run"] for r in _rows(res, kind=k, optimizer=opt)})[0] for k in kinds}
    rounds = sorted({r["round"] for r in res["rows"] if r["kind"] in kinds and r["optimizer"] == opt})
    fig, axes = plt.subplots(len(kinds), len(rounds), figsize=(3.1 * len(rounds), 2.9 * len(kinds)), squeeze=False, sharey=True)
    x = np.arange(len(LABELS))
    for i, kind in enumerate(kinds):
        for j, k in enumerate(rounds):
            ax = axes[i, j]
            rows = {r["outcome"]: r for r in _rows(res, run=first[kind], round=k)}
            if not rows:
                ax.axis("off")
                continue
            pred = np.array([rows[lab]["predicted"] for lab in LABELS])
            obs = np.array([rows[lab]["observed"] for lab in LABELS])
            perr = np.array([[pred[n] - rows[lab]["predicted_lo"], rows[lab]["predicted_hi"] - pred[n]] for n, lab in enumerate(LABELS)]).T
            oerr = np.array([[obs[n] - rows[lab]["observed_lo"], rows[lab]["observed_hi"] - obs[n]] for n, lab in enumerate(LABELS)]).T
            base = np.array([rows[lab]["base"] for lab in LABELS])
            ax.bar(x - 0.2, pred, 0.38, yerr=perr, color="#9fb8d8", label="tilt model", capsize=2)
            ax.bar(x + 0.2, obs, 0.38, yerr=oerr, color=[COLOURS[lab] for lab in LABELS], label="observed", capsize=2)
            ax.scatter(x, base, marker="_", s=300, color="black", label="base policy", zorder=3)
            ax.set_xticks(x, ["success", "wrong\nobject", "miss"], fontsize=8)
            ax.set_title(f"{opt} · {'learned r' if kind == 'learned' else 'verifier-gated r'} · round {k} · β={rows[LABELS[0]]['beta']:.3g}",
                         fontsize=9)
            if j == 0:
                ax.set_ylabel("outcome frequency")
    axes[0, 0].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


def figure_over_finetuning(res: dict, opt: str) -> plt.Figure:
    """Success and wrong-object rate per round for every run of one optimiser, with the tilt model's prediction."""
    kinds = [k for k in ("learned", "verified") if _rows(res, kind=k, optimizer=opt)]
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.2 * len(kinds), 3.6), squeeze=False, sharey=True)
    base = res["base_frequencies"]
    for ax, kind in zip(axes[0], kinds):
        runs = sorted({r["run"] for r in _rows(res, kind=kind, optimizer=opt)})
        for lab in ("success", "wrong_object"):
            for n, run in enumerate(runs):
                rows = sorted(_rows(res, run=run, outcome=lab), key=lambda r: r["round"])
                ks = [0] + [r["round"] for r in rows]
                obs = [base[lab].value] + [r["observed"] for r in rows]
                lo = [base[lab].lo] + [r["observed_lo"] for r in rows]
                hi = [base[lab].hi] + [r["observed_hi"] for r in rows]
                style = "-o" if n == 0 else "--s"
                ax.plot(ks, obs, style, color=COLOURS[lab], label=f"{lab} observed ({run})", ms=4)
                ax.fill_between(ks, lo, hi, color=COLOURS[lab], alpha=0.12)
                if n == 0:
                    pred = [base[lab].value] + [r["predicted"] for r in rows]
                    ax.plot(ks, pred, ":", color=COLOURS[lab], lw=2, label=f"{lab} tilt model")
        ax.set_xlabel("fine-tuning round k  (β_eff = β / k)" if opt == "rwr" else "PPO round k  (β = kl_coef in every round)")
        ax.set_title(f"{opt}: " + ("learned reward (second run = re-optimisation)" if kind == "learned" else "verifier-gated reward"))
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7)
    axes[0, 0].set_ylabel("rate")
    fig.tight_layout()
    return fig


def figure_reward(res: dict) -> plt.Figure:
    """Why: E[r | outcome] of the learned reward on base samples, and example frames with their rewards."""
    fig = plt.figure(figsize=(10, 3.2))
    ax = fig.add_subplot(1, 4, 1)
    rb = {r["outcome"]: r for r in res["reward_by_outcome"]}
    ax.bar(range(3), [rb[lab]["mean_reward"] for lab in LABELS], yerr=[rb[lab]["std_reward"] for lab in LABELS],
           color=[COLOURS[lab] for lab in LABELS], capsize=3)
    ax.set_xticks(range(3), ["success", "wrong\nobject", "miss"], fontsize=8)
    ax.set_ylabel("learned reward")
    ax.set_title("E[r | outcome], base policy", fontsize=9)
    for n, lab in enumerate(LABELS):
        frames = res["example_frames"][lab]
        if len(frames) == 0:
            continue
        sub = fig.add_subplot(1, 4, n + 2)
        gap = np.full((frames.shape[1], 2, 3), 255, dtype=np.uint8)
        sub.imshow(np.concatenate([x for f in frames[:3] for x in (f, gap)][:-1], axis=1), interpolation="nearest")
        sub.set_title(f"{lab}: r = " + ", ".join(f"{v:.2f}" for v in res["example_rewards"][lab][:3]), fontsize=8)
        sub.axis("off")
    fig.tight_layout()
    return fig


def figure_training(res: dict) -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(9, 2.8))
    axes[0].plot(res["bc_losses"], lw=0.6)
    axes[0].set_title("behaviour cloning: denoising loss", fontsize=9)
    axes[0].set_yscale("log")
    axes[1].plot(res["reward_losses"], lw=0.6)
    axes[1].set_title("reward model: weighted BCE", fontsize=9)
    axes[1].set_yscale("log")
    for ax in axes:
        ax.set_xlabel("step")
    fig.tight_layout()
    return fig


def table_rows(res: dict) -> list[dict]:
    out = []
    for (run, k), group in _group(res["rows"]).items():
        by = {r["outcome"]: r for r in group}
        row = {"run": run, "round": k, "beta_eff": by["success"]["beta"], "ESS": by["success"]["ess"],
               "KL to BC (nats/episode)": by["success"]["kl_to_bc"], "fitted beta": by["success"]["fitted_beta"]}
        for lab in LABELS:
            r = by[lab]
            row[f"{lab} observed"] = f"{r['observed']:.3f} [{r['observed_lo']:.3f}, {r['observed_hi']:.3f}]"
            row[f"{lab} predicted"] = f"{r['predicted']:.3f} [{r['predicted_lo']:.3f}, {r['predicted_hi']:.3f}]"
        out.append(row)
    return out


def side_by_side(res: dict) -> list[dict]:
    """Last round of the first run of each kind, one row per optimiser and kind: observed vs predicted."""
    out = []
    for opt in res["optimizers"]:
        for kind in ("learned", "verified", "control"):
            sel = _rows(res, optimizer=opt, kind=kind)
            if not sel:
                continue
            run = sorted({r["run"] for r in sel})[0]
            k = max(r["round"] for r in sel if r["run"] == run)
            by = {r["outcome"]: r for r in sel if r["run"] == run and r["round"] == k}
            row = {"optimizer": opt, "reward": kind, "round": k, "β": by["success"]["beta"]}
            for lab in ("success", "wrong_object"):
                row[f"{lab} observed"] = f"{by[lab]['observed']:.3f} [{by[lab]['observed_lo']:.3f}, {by[lab]['observed_hi']:.3f}]"
                row[f"{lab} predicted"] = f"{by[lab]['predicted']:.3f} [{by[lab]['predicted_lo']:.3f}, {by[lab]['predicted_hi']:.3f}]"
            row["fitted β"] = by["success"]["fitted_beta"]
            row["KL to BC"] = by["success"]["kl_to_bc"]
            out.append(row)
    return out


def _group(rows: list[dict]) -> dict[tuple[str, int], list[dict]]:
    out: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        out.setdefault((r["run"], r["round"]), []).append(r)
    return out


def _scale(cfg: Any, opt: str) -> str:
    if opt == "ppo":
        p = cfg.ppo
        return f"ppo {p.rounds} rounds x {p.iterations_per_round} iterations x {p.samples} episodes, β={p.kl_coef:g}, KL ≤ {p.kl_max:g}"
    return f"rwr {cfg.finetune.rounds} rounds x {cfg.finetune.samples_per_round} samples, β={cfg.finetune.beta:g}"


TASK_NOTES = {
    "drawer": "the built-in 2-D drawer task",
    "metaworld-drawer": "Meta-World's Sawyer drawer-open-v3 scene (MuJoCo) with a second, blue-handled drawer as the distractor",
}


def build_report(res: dict, out: Path, store: Path, command: str) -> Path:
    cfg = res["config"]
    t = res["timings"]
    rep = Report(
        "reward-tilt: a learned reward tilts a diffusion policy toward the wrong drawer",
        claim=CLAIM,
        scale_note=f"{cfg.scale}: {TASK_NOTES[cfg.task]} rendered at 32x32, {cfg.demos.episodes} demos; "
        + "; ".join(_scale(cfg, opt) for opt in res["optimizers"]) + f"; {t['total']:.0f} s wall on {cfg.threads} torch thread(s).",
    )
    rep.section("Result", "Each check compares the last fine-tuning round with the base (BC) policy by non-overlapping 95% "
                "intervals (Wilson for frequencies, bootstrap over base samples for predictions).")
    opts = res["optimizers"]
    claims = list(res["checks_by_optimizer"][opts[0]])
    rep.table([{"claim": c, **{OPTIMIZER_NAMES[o]: ("yes" if res["checks_by_optimizer"][o].get(c) else "NO") for o in opts}}
               for c in claims], caption=f"Checks per optimiser ({opts[0]} is the default)")
    rep.text("PPO (`train/diffusion_pg.py`) maximises E[r] − β KL(π‖π_BC) by the clipped policy gradient over the "
             "denoising chain, from its own samples; it never fits the tilted distribution, so agreement with the tilt "
             "model is a prediction, not a construction. Reward-weighted regression (`train/diffusion_rl.py`) fits "
             "π_0 exp(k r / β) / Z directly. β for PPO is its KL coefficient (the same in every round); the KL column "
             "is the measured chain KL to the BC policy in nats per episode (PPO keeps it under ppo.kl_max).")
    rep.table(side_by_side(res), caption="Last round, both optimisers: observed and tilt-model frequencies [95% CI]")
    rd = res["reward_data"]
    negatives = ("none shows the wrong drawer open" if cfg.reward.hard_negatives == 0
                 else f"{rd['outcomes']['wrong_object']} show the wrong drawer open, labelled 0")
    jitter = (f" Training used hue jitter of up to ±{cfg.reward.hue_jitter * 360:.0f}°, a common augmentation that also makes the "
              "handle colour — the only cue separating the target from the distractor — uninformative." if cfg.reward.hue_jitter else "")
    rep.section("Why: the learned reward gives credit to the wrong drawer",
                f"The reward model was trained on {rd['frames']} labelled final frames ({rd['positives']} successes) from "
                f"rollouts aimed at the target drawer and random rollouts; {negatives}.{jitter} On the base policy's samples "
                "it scores outcomes as below — the tilt model turns E[r | outcome] into growth.")
    rep.figure(figure_reward(res), "Learned reward by outcome on base samples, and example final frames (red handle = target).", name="reward_by_outcome")
    rep.table(res["reward_by_outcome"], caption="E[r | outcome] on base-policy samples")
    rep.section("Predicted vs observed outcome frequencies per β",
                "Reward-weighted regression's round k targets the KL-regularised optimum pi_0 exp(k r / β) / Z, i.e. "
                "β_eff = β / k; PPO targets pi_0 exp(r / β) / Z with β = its KL coefficient in every round. "
                "The tilt model predicts the outcome frequencies from the base samples alone (per layout, then mixed).")
    for n, opt in enumerate(opts):
        rep.figure(figure_per_beta(res, opt), f"{OPTIMIZER_NAMES[opt]}: tilt-model prediction (blue, 95% bootstrap CI) vs observed "
                   "frequencies after fine-tuning (95% Wilson CI); black tick = base policy.",
                   name="predicted_vs_observed" if n == 0 else f"predicted_vs_observed_{opt}")
    rep.section("Success and wrong-object rate over fine-tuning",
                "Where observation and prediction part (typically misses staying above the tilt model in late rounds), "
                "the fitted diffusion policy falls short of the KL-regularised optimum it targets; the zero-reward control "
                "below measures how far refitting alone moves the frequencies.")
    for n, opt in enumerate(opts):
        rep.figure(figure_over_finetuning(res, opt), f"{OPTIMIZER_NAMES[opt]}: observed rates per round (bands: 95% CI) and the "
                   "tilt model (dotted).", name="over_finetuning" if n == 0 else f"over_finetuning_{opt}")
    rep.table(table_rows(res), caption="Every run and round: observed and predicted frequencies [95% CI]; fitted β = the tilt "
              "coefficient that best explains the observed frequencies; ESS = effective sample size of the round's weights")
    for opt in opts:
        control = _rows(res, kind="control", optimizer=opt)
        if control:
            how = ("refits the policy to its own samples with uniform weights" if opt == "rwr"
                   else "runs PPO with zero advantages (only the KL term, zero at the start, acts)")
            rep.note(f"Control ({opt}): the zero-reward run {how}. Its drift (observed vs base) is the part of any change that "
                     "optimisation did not cause: " + ", ".join(f"{r['outcome']} {r['base']:.3f} -> {r['observed']:.3f}" for r in control) + ".")
    rep.section("Training curves")
    rep.figure(figure_training(res), "Behaviour-cloning and reward-model losses.", name="training")
    rep.table([{"stage": k, "seconds": v} for k, v in t.items()], caption="Wall time")
    rep.table([{"outcome": k, "demos": v} for k, v in res["demo_outcomes"].items()], caption="Demonstration outcomes")
    rep.config(cfg)
    rep.reproduce(command, seeds=cfg.seed, store=store)
    rep.text(f"Run id in the store: `{res['run_id']}`; analyse with `harnessrl analyze {store} --reference bc`.")
    return rep.write(out / "report.html")
