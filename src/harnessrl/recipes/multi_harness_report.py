"""The multi-harness recipe's report: solve rates with CIs on trained and sealed harnesses, the
Within - Cross difference, steps per episode, failure modes, group-signal fraction, scale."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator
import numpy as np

from harnessrl.episode import Episode
from harnessrl.evaluate.matrix import harness_summary
from harnessrl.evaluate.seal import verify_seal, write_sealed_eval
from harnessrl.evaluate.stats import Estimate, bootstrap_ci
from harnessrl.harness.base import make_harness
from harnessrl.records import RecordStore
from harnessrl.recipes.multi_harness import CLAIM
from harnessrl.recipes.multi_harness_ceiling import ceiling_section, decomposition, mixed_outcomes, mixed_text
from harnessrl.report.html import Report

OUTCOMES = ("solved", "wrong_value", "wrong_object", "dropped_requirement", "no_answer")
LABEL = {"sft": "SFT (start)", "within": "RL Within", "cross": "RL Cross"}


def _episodes(store: RecordStore, run_ids: list[str]) -> list[Episode]:
    quoted = ",".join("'" + r.replace("'", "''") + "'" for r in run_ids)
    return store.episodes(f"run_id IN ({quoted})") if run_ids else []


def _by_task(episodes: list[Episode]) -> dict[str, float]:
    """Per-task solve rate (over seeds, evaluation worlds and harnesses given)."""
    acc: dict[str, list[bool]] = defaultdict(list)
    for e in episodes:
        acc[e.context.task_id].append(e.success)
    return {t: float(np.mean(v)) for t, v in acc.items()}


def _run_key(ep: Episode) -> str:
    """The RL run an evaluation episode belongs to: run ids are eval-<run> and sealed-<run>."""
    return ep.run_id.split("-", 1)[1]


def _run_task_matrix(episodes: list[Episode], runs: list[str], tasks: list[str]) -> np.ndarray:
    """(runs, tasks) solve rate of each run on each task (over its evaluation worlds)."""
    acc: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for e in episodes:
        acc[(_run_key(e), e.context.task_id)].append(e.success)
    return np.array([[np.mean(acc[(r, t)]) if acc.get((r, t)) else np.nan for t in tasks] for r in runs])


def _two_level_diff(a: np.ndarray, b: np.ndarray, n: int = 2000, seed: int = 0) -> Estimate:
    """Mean(a) - mean(b) with a bootstrap over seeds (each rule's runs) and, paired, over tasks.

    a, b: (runs, tasks) matrices of two rules on the same tasks. Resampling runs as well as tasks
    keeps seed-to-seed variation in the interval (a bootstrap over tasks alone would hide it).
    """
    rng = np.random.default_rng(seed)
    point = float(np.nanmean(a) - np.nanmean(b))
    T = a.shape[1]
    stats = np.empty(n)
    for i in range(n):
        t = rng.integers(0, T, T)
        ra, rb = rng.integers(0, a.shape[0], a.shape[0]), rng.integers(0, b.shape[0], b.shape[0])
        stats[i] = np.nanmean(a[ra][:, t]) - np.nanmean(b[rb][:, t])
    lo, hi = np.nanpercentile(stats, [2.5, 97.5])
    return Estimate(point, float(lo), float(hi), int(a.shape[0] + b.shape[0]))


def _rule_diff(ev: dict[str, list[Episode]], harnesses: list[str], rule_a: str, rule_b: str) -> Estimate:
    a_eps = [e for e in ev[rule_a] if e.context.harness_id in harnesses]
    b_eps = [e for e in ev[rule_b] if e.context.harness_id in harnesses]
    tasks = sorted({e.context.task_id for e in a_eps} & {e.context.task_id for e in b_eps})
    runs = lambda eps: sorted({_run_key(e) for e in eps})  # noqa: E731
    return _two_level_diff(_run_task_matrix(a_eps, runs(a_eps), tasks), _run_task_matrix(b_eps, runs(b_eps), tasks))


def _gain_over_start(rep: Report, ev: dict[str, list[Episode]], rules: list[str], trained: list[str],
                     sealed_h: str) -> None:
    """Did RL learn? Each rule's held-out solve rate minus the warm start's, paired over tasks
    (and over the rule's seeds), on the trained harnesses and on the sealed one."""
    rows = []
    for rule in rules:
        if rule not in ev:
            continue
        row: dict[str, Any] = {"rule": LABEL.get(rule, rule)}
        for name, hs in (("trained harnesses", trained), (f"{sealed_h} (sealed)", [sealed_h])):
            d = _rule_diff(ev, hs, rule, "sft")
            row[f"gain, {name}"] = _ci_text(d)
            row[f"CI excludes 0 ({name})"] = "yes" if d.lo > 0 or d.hi < 0 else "no"
        rows.append(row)
    if rows:
        rep.section("Gain over the warm start", (
            "Held-out pass@1 of each RL policy minus that of the SFT model it started from, with a 95% bootstrap CI "
            "over the rule's seeds and, paired, over held-out tasks (same tasks and evaluation worlds on both sides)."))
        rep.table(rows, caption="RL - SFT on held-out tasks [95% CI]")


def _ci_text(est) -> str:
    return f"{est.value:+.3f} [{est.lo:+.3f}, {est.hi:+.3f}]"


def build_report(res: dict[str, Any], command: str) -> Path:
    cfg, out = res["cfg"], Path(res["out"])
    store = RecordStore(out / "store")
    # harness ids as episodes record them (a harness given as a spec file is known by its id)
    trained, sealed_h = [make_harness(h).id for h in cfg.train_harnesses], make_harness(cfg.sealed_harness).id
    groups = {"sft": ["sft"], **{r: [f"{r}-s{s}" for s in cfg.seeds] for r in cfg.rules}}
    ev = {g: _episodes(store, [f"eval-{k}" for k in keys] + [f"sealed-{k}" for k in keys]) for g, keys in groups.items()}
    problems = _sealed_evaluation(res, store, ev, sealed_h)
    seal = res["seal"]

    rep = Report("Multi-harness RL: Within vs Cross grouping", claim=CLAIM, scale_note=_scale_note(res))
    summaries = _solve_rates(rep, ev, trained, sealed_h, seal.name)
    _gain_over_start(rep, ev, cfg.rules, trained, sealed_h)
    if all(r in ev for r in ("within", "cross")):
        _rule_vs_harness(rep, res, ev, summaries, trained, sealed_h)
    if res.get("ref_ids"):
        sft_id = make_harness(cfg.sft_harness).id
        base = sft_id if sft_id in trained else trained[0]
        ceiling_section(rep, decomposition(store, groups, [*trained, sealed_h], base, cfg.ref_samples), LABEL, sealed_h)
    _failure_modes(rep, ev, [*trained, sealed_h])
    if res["results"]:
        _training(rep, res["results"], cfg.rules, trained)
    sft_info = res["sft"]
    if res.get("oracle_records"):
        rep.section("Oracle records through the harnesses", (
            "The oracle's episodes through every trained harness on the training tasks, stored before any training "
            "(run `oracle-records`): each task is solvable through each harness as that harness (or program) runs it."))
        rep.table([{k: (str(v) if isinstance(v, dict) else v) for k, v in r.items()} for r in res["oracle_records"]],
                  caption="oracle episodes per harness", digits=2)
    if sft_info.get("given"):
        rep.section("Warm start", f"Given: {sft_info['given']} ({sft_info['parameters']:,} parameters"
                    + (f"; its SFT: {sft_info['demonstrations']} demonstrations, loss {sft_info['loss_first']:.3f} -> "
                       f"{sft_info['loss_last']:.3f} in {sft_info['steps']} steps" if sft_info["steps"] else "") + ").")
    else:
        rep.section("SFT warm start", f"{sft_info['demonstrations']} demonstrations ({sft_info['demo_tokens']:,} tokens), "
                    f"loss {sft_info['loss_first']:.3f} -> {sft_info['loss_last']:.3f} in {sft_info['steps']} steps "
                    f"({sft_info['seconds']:.0f} s).")
    rep.section("Seal", f"Seal `{seal.name}` ({seal.path}) holds {sealed_h}; its one evaluation is {seal.eval_path}. "
                + ("Verification: intact." if not problems else "Verification problems: " + "; ".join(problems)))
    if res.get("manifest_sha256"):
        rep.section("Training records", f"Every run ({', '.join(cfg.rules)}) trained on one frozen manifest of "
                    f"{res['manifest_records']} task-harness records (first prompt, tools, harness spec and task files "
                    f"hashed; {out / 'manifest.json'}), checked by each run before its first update: sha256 "
                    f"`{res['manifest_sha256'][:16]}…`.")
    rep.config(cfg)
    rep.reproduce(command, seeds=cfg.seeds, store=out / "store")
    return rep.write(out / "report.html")


def _sealed_evaluation(res: dict[str, Any], store: RecordStore, ev: dict[str, list[Episode]], sealed_h: str) -> list[str]:
    """The seal's one evaluation: every sealed episode of every policy, written once, then verified
    (returns the verification problems; none = intact)."""
    seal = res["seal"]
    sealed_ids = res["sft_sealed_ids"] + [i for r in res["results"] for i in r["sealed_ids"]] \
        + [i for i in res.get("ref_ids", []) if i.startswith("sealed-ref-")]
    if not seal.eval_path.exists():
        summary = {g: float(np.mean([e.success for e in eps if e.context.harness_id == sealed_h] or [0.0]))
                   for g, eps in ev.items()}
        write_sealed_eval(seal, store, sealed_ids, {"solve_rate": summary})
    return verify_seal(seal.name, store, Path(res["out"]) / "seals")


def _scale_note(res: dict[str, Any]) -> str:
    """What this run was (model, suite, SFT, RL, evaluation, wall time) next to the paper's scale."""
    cfg, sft_info = res["cfg"], res["sft"]
    episodes_trained = sum(r["metrics"][-1]["episodes"] * len(r["metrics"]) for r in res["results"]) if res["results"] else 0
    scale = "small scale on a CPU" if cfg.model else "tiny scale"
    return (f"{scale} — a mechanism check, not the paper's. Model: {sft_info['parameters']:,} parameters "
            f"({'given: ' + cfg.model if cfg.model else 'Qwen2-style, random init, tokenizer trained here'}; "
            f"{'LoRA rank ' + str(cfg.lora_rank) if cfg.lora_rank else 'full fine-tuning'}). Suite {cfg.suite!r}: "
            f"{res['train_tasks']} training tasks, {res['eval_tasks']} held-out tasks. "
            + (f"Warm start given ({sft_info['given']}). " if sft_info.get("given") else
               f"SFT: {sft_info['demonstrations']} oracle demonstrations through {cfg.sft_harness!r}, {sft_info['steps']} steps. ")
            + f"RL: {cfg.objective}, "
            f"{len(cfg.rules)} grouping rules x {len(cfg.seeds)} seeds x {cfg.updates} updates, {episodes_trained:,} "
            f"training episodes in all. Evaluation: greedy, {cfg.eval_seeds} episode(s) per held-out task and harness. "
            f"Wall time {res['wall_s']:.0f} s. The paper: Qwen3-8B, four coding harnesses, 24,000 sealed evaluations.")


def _solve_rates(rep: Report, ev: dict[str, list[Episode]], trained: list[str], sealed_h: str,
                 seal_name: str) -> dict[str, dict[str, Any]]:
    """The pass@1 table and figure; returns harness_summary rows per policy group and harness."""
    rep.section("Solve rate on held-out tasks", (
        f"pass@1 (greedy) per harness with 95% percentile-bootstrap CIs over tasks; seeds pooled. Trained harnesses: "
        f"{', '.join(trained)}. Sealed (never trained on, evaluated once under seal `{seal_name}`): {sealed_h}."))
    rows, summaries = [], {}  # harness_summary: CIs over tasks (seeds pooled); the rule difference below adds seeds
    for g, eps in ev.items():
        summ = {r["harness_id"]: r for r in harness_summary(eps, seed=0)}
        summaries[g] = summ
        row: dict[str, Any] = {"policy": LABEL.get(g, g)}
        for h in [*trained, sealed_h]:
            s = summ.get(h)
            row[h + (" (sealed)" if h == sealed_h else "")] = f"{s['pass@1']:.3f} [{s['pass@1_lo']:.3f}, {s['pass@1_hi']:.3f}]" if s else "–"
        tr = [e for e in eps if e.context.harness_id in trained]
        est = bootstrap_ci(np.array(list(_by_task(tr).values())), seed=0)
        row["trained (mean)"] = f"{est.value:.3f} [{est.lo:.3f}, {est.hi:.3f}]"
        rows.append(row)
    rep.table(rows, caption="pass@1 [95% CI]")
    rep.figure(_bars(summaries, [*trained, sealed_h], sealed_h), "pass@1 per harness and policy (95% CIs over tasks)", name="solve_rates")
    return summaries


def _rule_vs_harness(rep: Report, res: dict[str, Any], ev: dict[str, list[Episode]], summaries: dict[str, dict[str, Any]],
                     trained: list[str], sealed_h: str) -> None:
    """Within - Cross with CIs on trained and sealed harnesses, next to the spread the evaluation harness alone causes."""
    d_tr = _rule_diff(ev, trained, "within", "cross")
    d_se = _rule_diff(ev, [sealed_h], "within", "cross")
    rates = [summaries[g][h]["pass@1"] for g in summaries for h in summaries[g]]
    spread = {h: [summaries[g][h]["pass@1"] for g in ("within", "cross") if h in summaries[g]] for h in [*trained, sealed_h]}
    lo_h = min(spread, key=lambda h: np.mean(spread[h]))
    hi_h = max(spread, key=lambda h: np.mean(spread[h]))
    rep.section("Grouping rule vs evaluation harness", (
        f"Within - Cross (95% CI from a bootstrap over seeds and, paired, over held-out tasks): trained harnesses "
        f"{_ci_text(d_tr)}; sealed harness "
        f"{_ci_text(d_se)}. "
        + ("The interval on the sealed harness contains 0: at this scale, Cross credit did not make the policy more "
           "portable than Within. " if d_se.lo <= 0 <= d_se.hi else
           f"The interval on the sealed harness excludes 0: {'Within' if d_se.value > 0 else 'Cross'} transferred better here. ")
        + f"For comparison, the evaluation harness alone moves the RL policies' solve rate from {np.mean(spread[lo_h]):.3f} "
          f"({lo_h}) to {np.mean(spread[hi_h]):.3f} ({hi_h}); all solve rates here lie in [{min(rates):.3f}, {max(rates):.3f}]."))
    per_seed = []
    for r in res["results"]:
        eps = [e for e in ev[r["rule"]] if e.run_id in (f"eval-{r['key']}", f"sealed-{r['key']}")]
        row = {"run": r["key"]}
        for h in [*trained, sealed_h]:
            he = [e.success for e in eps if e.context.harness_id == h]
            row[h] = float(np.mean(he)) if he else float("nan")
        row["train s (updates)"] = r["train_s"]
        per_seed.append(row)
    rep.table(per_seed, caption="pass@1 per run (held-out tasks)", digits=3)


def _failure_modes(rep: Report, ev: dict[str, list[Episode]], harnesses: list[str]) -> None:
    """Mean steps and outcome rates per policy and harness, and their figure."""
    seen = {e.outcome for eps in ev.values() for e in eps}
    lookup = all(e.context.task_id.startswith("lookup/") for eps in ev.values() for e in eps)
    # the code suites share some label names with the lookup suite, not their meanings
    outcomes = OUTCOMES if lookup and seen <= set(OUTCOMES) else tuple(sorted(seen, key=lambda o: (o != "solved", o)))
    rep.section("Steps per episode and failure modes", (
        "Outcome labels of the lookup suite: solved; wrong_value; wrong_object (the asked attribute of another object); "
        "dropped_requirement (one of two asked values); no_answer (turn limit, repeated format errors or token budget)."
        if outcomes is OUTCOMES else "Outcome labels as the suite's grader gives them: " + ", ".join(outcomes) + "."))
    fm_rows = []
    for g, eps in ev.items():
        for h in harnesses:
            he = [e for e in eps if e.context.harness_id == h]
            if not he:
                continue
            oc = Counter(e.outcome for e in he)
            fm_rows.append({"policy": LABEL.get(g, g), "harness": h, "episodes": len(he),
                            "steps/episode": float(np.mean([e.num_turns for e in he])),
                            "steps (solved)": float(np.mean([e.num_turns for e in he if e.success] or [np.nan])),
                            "format errors/ep": float(np.mean([e.format_errors for e in he])),
                            **{o: oc.get(o, 0) / len(he) for o in outcomes},
                            "turn_limit": float(np.mean([e.status == "turn_limit" for e in he]))})
    rep.table(fm_rows, caption="Mean steps and outcome rates per policy and harness", digits=3)
    rep.figure(_failure_bars(fm_rows, outcomes), "Outcome rates per policy (all harnesses)", name="failure_modes")


def _training(rep: Report, results: list[dict[str, Any]], rules: list[str], trained: list[str]) -> None:
    """Group-signal fraction per grouping rule and the learning curves."""
    rep.section("Training: group-signal fraction and learning curves", (
        "The group-signal fraction is the share of advantage groups whose rewards are not all equal (only those carry a "
        "gradient); with binary rewards of success rate p a group of n carries signal with probability 1-(1-p)^n-p^n. "
        "Cross groups pool a task's harnesses, so a task solved through one harness and failed through another "
        "carries signal under Cross but not under Within."))
    sig_rows = []
    for rule in rules:
        runs = [r for r in results if r["rule"] == rule]
        sig = np.array([[m["signal_fraction"] for m in r["metrics"]] for r in runs])
        sig_rows.append({"rule": rule, "signal fraction (mean over updates)": float(sig.mean()),
                         "first 5 updates": float(sig[:, :5].mean()), "last 5 updates": float(sig[:, -5:].mean()),
                         "KL at end": float(np.mean([r["metrics"][-1].get("kl", np.nan) for r in runs]))})
    rep.table(sig_rows, caption="Group-signal fraction", digits=3)
    mixed = mixed_outcomes(results, rules)
    rep.text(mixed_text(mixed))
    rep.table(mixed, caption="Advantage groups with mixed outcomes, all updates", digits=3)
    rep.figure(_curves(results, rules, trained), "Training solve rate per harness (mean over seeds, "
               "5-update moving average) and group-signal fraction", name="training")


def _bars(summaries: dict[str, dict[str, Any]], harnesses: list[str], sealed: str):
    fig, ax = plt.subplots(figsize=(8, 3.6))
    groups = list(summaries)
    width = 0.8 / len(groups)
    for i, g in enumerate(groups):
        vals = [summaries[g].get(h, {}).get("pass@1", np.nan) for h in harnesses]
        lo = [v - summaries[g].get(h, {}).get("pass@1_lo", v) for h, v in zip(harnesses, vals)]
        hi = [summaries[g].get(h, {}).get("pass@1_hi", v) - v for h, v in zip(harnesses, vals)]
        ax.bar(np.arange(len(harnesses)) + i * width, vals, width, yerr=[lo, hi], capsize=3, label=LABEL.get(g, g))
    ax.set_xticks(np.arange(len(harnesses)) + width * (len(groups) - 1) / 2)
    ax.set_xticklabels([h + ("\n(sealed)" if h == sealed else "") for h in harnesses])
    ax.set_ylabel("pass@1")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    return fig


def _failure_bars(rows: list[dict[str, Any]], outcomes: tuple[str, ...] = OUTCOMES):
    fig, ax = plt.subplots(figsize=(8, 3.2))
    pols = list(dict.fromkeys(r["policy"] for r in rows))
    bottom = np.zeros(len(pols))
    for o in outcomes:
        vals = np.array([np.mean([r[o] for r in rows if r["policy"] == p]) for p in pols])
        ax.bar(pols, vals, bottom=bottom, label=o)
        bottom += vals
    ax.set_ylabel("share of episodes")
    ax.legend(fontsize=7, ncol=3)
    return fig


def _curves(results: list[dict[str, Any]], rules: list[str], harnesses: list[str]):
    fig, axes = plt.subplots(1, len(harnesses) + 1, figsize=(3.2 * (len(harnesses) + 1), 3), sharey=True)

    def plot(ax, y: np.ndarray, style: str, rule: str) -> None:
        """The moving average at the update each window ends on; markers, so a run of one update shows."""
        ys = np.convolve(y, np.ones(5) / 5, mode="valid") if len(y) >= 5 else y
        ax.plot(np.arange(len(y) - len(ys) + 1, len(y) + 1), ys, style, marker="o", markersize=4, label=rule)

    for rule, style in zip(rules, ("-", "--", ":")):
        runs = [r for r in results if r["rule"] == rule]
        for ax, h in zip(axes, harnesses):
            plot(ax, np.nanmean([[m.get(f"solve/{h}", np.nan) for m in r["metrics"]] for r in runs], axis=0), style, rule)
            ax.set_title(h, fontsize=9)
        plot(axes[-1], np.mean([[m["signal_fraction"] for m in r["metrics"]] for r in runs], axis=0), style, rule)
    axes[-1].set_title("group-signal fraction", fontsize=9)
    for ax in axes:
        ax.set_xlabel("update")
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlim(0.5, max(len(r["metrics"]) for r in results) + 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    axes[0].legend(fontsize=8)
    return fig
