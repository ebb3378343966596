"""The agentic-coding recipe's report: pass@1 of the base, the SFT model (a warm-started run) and
SFT+GSPO (pooled over the GSPO seeds) on each external suite (CIs over tasks, paired changes),
agent steps on tasks solved both before and after, failure modes, the GSPO runs, and the seals."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from harnessrl.episode import Episode
from harnessrl.evaluate.seal import verify_seal
from harnessrl.evaluate.stats import Estimate, bootstrap_ci
from harnessrl.records import RecordStore
from harnessrl.recipes.agentic_coding import CLAIM
from harnessrl.recipes.agentic_coding_episodes import probe_rows
from harnessrl.report.html import Report

#: result key -> label. `sft` is present only in a warm-started run; `after` pools the GSPO seeds.
LABELS = {"before": "base", "sft": "SFT", "after": "GSPO"}
#: Failure modes the paper names, as the grader labels them (tasks.scoring) and the harness counts them.
MODES = ("dropped_requirement", "broke_existing", "format_error")
TRAIN_COLUMNS = ("update", "episodes", "reward_mean", "solve_rate", "turns_mean", "format_errors", "signal_fraction",
                 "kl", "loss", "clipfrac", "grad_norm", "time_rollout_s", "time_update_s")


def _episodes(store: RecordStore, ids: list[str]) -> list[Episode]:
    if not ids:
        return []
    quoted = ",".join("'" + i.replace("'", "''") + "'" for i in ids)
    return store.episodes(f"episode_id IN ({quoted})")


def has_mode(ep: Episode, mode: str) -> bool:
    """dropped_requirement / broke_existing: in the grader's outcome label (it may carry both, joined by '+');
    format_error: at least one reply the harness could not parse."""
    if mode == "format_error":
        return ep.format_errors > 0
    return mode in (ep.outcome or "").split("+")


def per_task(episodes: list[Episode]) -> dict[str, float]:
    """Solve rate per task (over harnesses and seeds)."""
    acc: dict[str, list[bool]] = defaultdict(list)
    for e in episodes:
        acc[e.context.task_id].append(bool(e.success))
    return {t: float(np.mean(v)) for t, v in acc.items()}


def paired_change(before: list[Episode], after: list[Episode]) -> Estimate:
    """after - before pass@1 with a bootstrap over the tasks both policies were evaluated on (paired)."""
    b, a = per_task(before), per_task(after)
    tasks = sorted(set(a) & set(b))
    return bootstrap_ci(np.array([a[t] - b[t] for t in tasks]), seed=0)


def _ci(est: Estimate, sign: str = "") -> str:
    return f"{est.value:{sign}.3f} [{est.lo:{sign}.3f}, {est.hi:{sign}.3f}]"


def policies(res: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """{policy key: {suite: episode ids}} in report order: base, SFT (when warm-started), after GSPO."""
    out = {"before": res["before"]}
    if res.get("sft_eval"):
        out["sft"] = res["sft_eval"]
    out["after"] = res["after"]
    return out


def label(res: dict[str, Any], p: str) -> str:
    return "SFT+GSPO" if p == "after" and res.get("sft_eval") else LABELS[p]


def steps_solved_both(before: list[Episode], after: list[Episode]) -> dict[str, Any]:
    """Agent steps per solved episode on the tasks both policies solved at least once (the paper's
    "fewer steps" measure, on the same tasks): mean over tasks of each policy's mean steps when solved."""
    def steps(eps: list[Episode]) -> dict[str, float]:
        acc: dict[str, list[int]] = defaultdict(list)
        for e in eps:
            if e.success:
                acc[e.context.task_id].append(e.num_turns)
        return {t: float(np.mean(v)) for t, v in acc.items()}
    b, a = steps(before), steps(after)
    both = sorted(set(b) & set(a))
    return {"tasks solved by both": len(both), "steps before": float(np.mean([b[t] for t in both])) if both else float("nan"),
            "steps after": float(np.mean([a[t] for t in both])) if both else float("nan")}


def tables(res: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(pass@1 rows: one per external suite; failure rows: one per suite and policy)."""
    store = RecordStore(Path(res["out"]) / "store")
    pol = policies(res)
    start = "sft" if "sft" in pol else "before"  # what GSPO started from
    rates, modes = [], []
    for suite in res["suites"]:
        eps = {p: _episodes(store, ids.get(suite, [])) for p, ids in pol.items()}
        est = {p: bootstrap_ci(np.array(list(per_task(eps[p]).values())), seed=0) for p in pol}
        row = {"suite": suite, "tasks": len(res["suites"][suite]), "episodes/policy": len(eps["before"])}
        row.update({f"pass@1 {label(res, p)}": _ci(est[p]) for p in pol})
        row["change"] = _ci(paired_change(eps[start], eps["after"]), "+")  # what GSPO did
        if start == "sft":
            row["change vs base"] = _ci(paired_change(eps["before"], eps["after"]), "+")
            row["SFT vs base"] = _ci(paired_change(eps["before"], eps["sft"]), "+")
        row.update({f"_{p}": est[p].value for p in pol})
        rates.append(row)
        for p in pol:
            e = eps[p]
            modes.append({"suite": suite, "policy": label(res, p), "episodes": len(e),
                          "steps/episode": float(np.mean([x.num_turns for x in e])) if e else float("nan"),
                          "solved": float(np.mean([x.success for x in e])) if e else float("nan"),
                          **{m: float(np.mean([has_mode(x, m) for x in e])) if e else float("nan") for m in MODES},
                          "format errors/ep": float(np.mean([x.format_errors for x in e])) if e else float("nan"),
                          "turn limit": float(np.mean([x.status == "turn_limit" for x in e])) if e else float("nan")})
    return rates, modes


def steps_table(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Per suite: steps on tasks solved both before (base; and SFT when warm-started) and after GSPO."""
    store = RecordStore(Path(res["out"]) / "store")
    pol = policies(res)
    rows = []
    for suite in res["suites"]:
        after = _episodes(store, pol["after"].get(suite, []))
        for p in [q for q in pol if q != "after"]:
            rows.append({"suite": suite, "before = ": label(res, p),
                         **steps_solved_both(_episodes(store, pol[p].get(suite, [])), after)})
    return rows


def seed_table(res: dict[str, Any]) -> list[dict[str, Any]]:
    """pass@1 after GSPO per seed and suite (the pooled figure is their mean over tasks)."""
    store = RecordStore(Path(res["out"]) / "store")
    return [{"seed": seed, **{suite: _rate(_episodes(store, ids)) for suite, ids in by_suite.items()}}
            for seed, by_suite in res["after_by_seed"].items()]


def _rate(eps: list[Episode]) -> float:
    return float(np.mean([e.success for e in eps])) if eps else float("nan")


def seal_checks(res: dict[str, Any]) -> dict[str, list[str]]:
    """Per seal: verification problems ([] = intact): manifest, its one evaluation, each stored episode,
    and each sealed task's files against the fingerprints taken when it was sealed."""
    out = Path(res["out"])
    store = RecordStore(out / "store")
    return {k: verify_seal(s.name, store, out / "seals", tasks=res["suite_tasks"][k]) for k, s in res["seals"].items()}


def build_report(res: dict[str, Any], command: str) -> Path:
    cfg, out = res["cfg"], Path(res["out"])
    rates, modes = tables(res)
    rep = Report("Agentic coding: one epoch of GSPO with a LoRA adapter, external suites before vs after",
                 claim=CLAIM, scale_note=_scale_note(res))
    warm = (f" `SFT` is the base after the warm start (LoRA on {res['sft']['demonstrations']} oracle episodes through "
            f"{cfg.sft_harness_id()}, merged); GSPO trained a fresh adapter on it, so its KL reference is the SFT model; "
            "`change` is SFT+GSPO - SFT, `change vs base` SFT+GSPO - base.") if res.get("sft") else ""
    rep.section("pass@1 on external suites, before vs after training", (
        f"Greedy, {cfg.eval_seeds} episode(s) per task and harness ({', '.join(res['harnesses'])}); 95% percentile-"
        "bootstrap CIs over tasks; changes are paired by task. `base` is the starting model (no adapter), `GSPO` the "
        f"trained adapter, pooled over {len(cfg.rl_seeds)} GSPO seed(s) {cfg.rl_seeds} (per task: the mean over seeds "
        f"and episodes), on the same tasks and evaluation seeds.{warm}"
        + (f" Evaluated through but never trained in: {', '.join(cfg.eval_harnesses)}." if cfg.eval_harnesses else "")))
    rep.table([{k: v for k, v in r.items() if not k.startswith("_")} for r in rates], caption="pass@1 [95% CI]")
    rep.figure(_bars(res, rates), "pass@1 per policy and external suite", name="pass_at_1")
    rep.table(seed_table(res), caption="pass@1 after GSPO per seed", digits=3)
    rep.section("Agent steps on tasks solved both before and after", (
        "Per suite, the tasks that both policies solved at least once; per task the mean agent turns of its solved "
        "episodes, then the mean over those tasks."))
    rep.table(steps_table(res), caption="Steps per solved episode on tasks solved by both", digits=2)
    rep.section("Steps per episode and failure modes", (
        "Share of episodes with each failure mode (an episode can have several): dropped_requirement = a requirement "
        "test of the hidden suite fails; broke_existing = a regression test fails (behaviour the workspace had); "
        "format_error = at least one reply the harness could not parse. Steps = agent turns."))
    rep.table(modes, caption="Steps and failure modes per suite and policy", digits=3)
    rep.figure(_modes_fig(res, modes), "Mean steps and failure-mode shares per policy (all suites)", name="failure_modes")
    _training(rep, res)
    _seals(rep, res)
    rep.config(cfg)
    rep.reproduce(command, store=out / "store")
    return rep.write(out / "report.html")


def _scale_note(res: dict[str, Any]) -> str:
    cfg = res["cfg"]
    n_ep = sum(int(r.get("episodes", 0)) for r in res["metrics"])
    return (f"{'paper' if cfg.scale == 'paper' else 'small'} scale — the paper trained Kimi K2.7 Code on 1,700 tasks and "
            f"evaluated on six external benchmarks. Here: model {cfg.model or 'tiny Qwen2-style LM built here (random init)'}, "
            f"LoRA rank {cfg.lora_rank}; {len(res['train_tasks'])} training tasks of {cfg.suite!r} through "
            f"{', '.join(cfg.harnesses)} (turn limit {cfg.max_turns or 'the harness default'}, max_new_tokens "
            f"{cfg.max_new_tokens}); one epoch of {cfg.objective.upper()} over {len(res['gspo']['tasks'])} task(s) "
            f"({cfg.gspo_tasks}) = {res['gspo']['updates']} update(s) of "
            f"{min(cfg.tasks_per_update, len(res['gspo']['tasks']))} tasks x group {cfg.group_size} ({n_ep} training episodes, "
            f"engine {cfg.engine}, {len(cfg.rl_seeds)} seed(s)). "
            + (f"Warm start: SFT {res['sft']['steps']} step(s) on {res['sft']['demonstrations']} oracle episodes "
               f"through {cfg.sft_harness_id()} ({res['sft']['seconds']:.0f} s in the run that made it). " if res.get("sft") else "")
            + f"External suites: {', '.join(f'{k} ({len(v)})' for k, v in res['suites'].items())}. "
            f"Wall time {res['wall_s']:.0f} s and peak memory {res['peak_rss_gb']:.2f} GB RSS (this invocation).")


def _training(rep: Report, res: dict[str, Any]) -> None:
    keys = [k for k in TRAIN_COLUMNS if any(k in r for r in res["metrics"])]  # either engine's rows (engine.native_rows)
    rows = [{"seed": r.get("seed", 0), **{k: r.get(k, float("nan")) for k in keys}} for r in res["metrics"]]
    cfg = res["cfg"]
    n, tasks = res["gspo"]["updates"], res["gspo"]["tasks"]
    epoch = ("every chosen task is drawn exactly once" if n == 1 or cfg.engine == "trl" else
             "tasks are drawn per update without replacement within an update (an epoch in expectation)")
    _probe(rep, res)
    rep.section("Training: one epoch of GSPO", (
        f"{n} update(s) x {min(cfg.tasks_per_update, len(tasks))} tasks of {len(tasks)} "
        f"({'all training tasks' if cfg.gspo_tasks == 'all' else 'chosen by the probe'}); {epoch}. "
        f"Sequence-level importance ratios (GSPO), groups = task x harness, KL coefficient {cfg.kl_coef}; "
        "signal_fraction = the share of the update's groups with mixed outcomes (neither all solved nor all failed: "
        "the only groups with a non-zero advantage). "
        f"Training began {res['training_started']['utc']}."))
    rep.table(rows, caption="Per update", digits=4)


def _probe(rep: Report, res: dict[str, Any]) -> None:
    """The probe's solve rate per training task and which tasks GSPO trained on (when it probed)."""
    g, cfg = res["gspo"], res["cfg"]
    if not g.get("probe"):
        return
    p = g["probe"]
    rep.section("Probe before GSPO", (
        f"The start model ({'SFT' if res.get('sft') else 'base'}) sampled {p['samples']} episode(s) per training task "
        f"and training harness at temperature {p['temperature']} (seeds {p['seeds'][0]}-{p['seeds'][1]}, apart from "
        "the evaluation seeds). GSPO learns only from groups with mixed outcomes; "
        + ("gspo_tasks=sometimes trains on the tasks solved sometimes (0 < rate < 1), topped up to tasks_per_update "
           "by the rate nearest 1/2." if cfg.gspo_tasks == "sometimes" else "gspo_tasks=all trains on every task.")))
    rep.table(probe_rows(p, g["why"]), caption=f"Probe: {sum(0 < r < 1 for r in p['rates'].values())} of "
              f"{len(p['rates'])} training tasks mixed; GSPO trained on {len(g['tasks'])}", digits=3)


def _seals(rep: Report, res: dict[str, Any]) -> None:
    checks = seal_checks(res)
    for kind, seal in res["seals"].items():
        problems = checks[kind]
        text = (f"Seal `{seal.name}` ({seal.path}) holds {len(seal.task_ids)} task(s); created {seal.manifest['created']}; "
                f"its one evaluation (every policy) is {seal.eval_path}. "
                + ("Verification: intact." if not problems else "Verification problems: " + "; ".join(problems)))
        if kind == "heldout":
            text += (" The held-out tasks of the training suite, sealed before the warm start's demonstrations and "
                     "before training: neither may use them.")
        elif kind == "sealed":
            text += (" These tasks were held back from the training suite and sealed before training: training refuses "
                     "them, but they were written before training began (a stand-in for post-training data; give "
                     "--sealed-suite with tasks written after training began for the `fresh` split).")
        else:
            after = res["fresh_written_after"]
            text += (f" Written after training began ({res['training_started']['utc']}), by file times: "
                     f"{sum(after)} of {len(after)} task folders.")
        rep.section(f"Sealed split: {kind}", text)


def _bars(res: dict[str, Any], rates: list[dict[str, Any]]):
    fig, ax = plt.subplots(figsize=(7, 3.2))
    x, pol = np.arange(len(rates)), list(policies(res))
    w = 0.8 / len(pol)
    for i, p in enumerate(pol):
        ax.bar(x + (i - (len(pol) - 1) / 2) * w, [r[f"_{p}"] for r in rates], w, label=label(res, p))
    ax.set_xticks(x)
    ax.set_xticklabels([r["suite"] for r in rates])
    ax.set_ylabel("pass@1")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    return fig


def _modes_fig(res: dict[str, Any], modes: list[dict[str, Any]]):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3))
    names = [label(res, p) for p in policies(res)]
    mean = {p: {k: float(np.nanmean([r[k] for r in modes if r["policy"] == p])) for k in ("steps/episode", *MODES)}
            for p in names}
    a1.bar(names, [mean[p]["steps/episode"] for p in names])
    a1.set_title("steps per episode", fontsize=9)
    x, w = np.arange(len(MODES)), 0.8 / len(names)
    for i, p in enumerate(names):
        a2.bar(x + (i - (len(names) - 1) / 2) * w, [mean[p][m] for m in MODES], w, label=p)
    a2.set_xticks(x)
    a2.set_xticklabels([m.replace("_", "\n") for m in MODES], fontsize=8)
    a2.set_ylim(0, 1.05)
    a2.set_title("share of episodes", fontsize=9)
    a2.legend(fontsize=8)
    return fig
