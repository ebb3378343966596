"""The conditioned-critic recipe's outputs: evaluation episodes to the record store, the HTML report.

Every number in the report is computed from the runs' result files: value error per context
(Monte-Carlo, fresh episodes) with 95% bootstrap CIs over seeds, learning curves per context
with CI bands, and an aggregate table of normalised returns (IQM with stratified-bootstrap
CIs over seeds x contexts, rliable's protocol).
"""

from __future__ import annotations

import json
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from harnessrl.envs.bandit import BANDIT_ID  # noqa: E402
from harnessrl.episode import Context, Episode  # noqa: E402
from harnessrl.evaluate.levels import aggregate_iqm, iqm_change  # noqa: E402
from harnessrl.evaluate.stats import Estimate, bootstrap_ci  # noqa: E402
from harnessrl.fileio import atomic_write_text  # noqa: E402
from harnessrl.records import RecordStore  # noqa: E402
from harnessrl.report.html import Report  # noqa: E402

COLORS = {"shared": "#d62728", "conditioned": "#1f77b4", "multihead": "#2ca02c"}
CLAIM = ("When parallel environments assign different expected returns to the same state, a critic shared across them "
         "must average conflicting value targets; giving the critic the environment index fixes it (+40.8% aggregate "
         "normalised return on unseen Procgen levels in the paper).")


PAPER_PROCGEN = 0.408  # conditioned vs shared, IQM normalised return on unseen levels, 16 easy games x 25M steps
PAPER_SETUP = "16 easy-mode games, 25M steps per run, IMPALA CNN"


def env_id(cfg: Any, family: str, task: str) -> str:
    return {"bandit": BANDIT_ID, "cartpole": "CartPole-v1", "minigrid": cfg.minigrid.env_id}.get(family, task)


def store_episodes(cfg: Any, results: list[dict], out_dir: Path, store: RecordStore) -> int:
    """Append every run's evaluation episodes once; returns how many were appended now.

    Episode ids are fixed by (run, split, index), so appending is idempotent: a run killed
    between the append and its `stored` marker finds its episodes in the store on --resume and
    appends none twice. The marker only saves that query."""
    written = 0
    for r in results:
        job = r["job"]
        key = f"{job['family']}/{job['task']}/{job['critic']}/seed{job['seed']}"
        marker = out_dir / "runs" / key / "stored"
        if marker.exists():
            continue
        run_id = f"conditioned-critic/{key}"
        eps = []
        for split, rows in (("train", r["train_episodes"]), ("test", r["test_episodes"])):
            for i, e in enumerate(rows):
                ctx_name = r["contexts"][e["context"]] if split == "train" else "test-levels"
                eps.append(Episode(
                    episode_id=f"{run_id}/{split}/{i:05d}",
                    context=Context(task_id=f"{job['family']}/{ctx_name}", env_id=env_id(cfg, job["family"], job["task"]),
                                    level=e["level"] if e["level"] >= 0 else e["context"], seed=job["seed"]),
                    reward=e["ret"], success=job["family"] == "minigrid" and e["ret"] > 0,
                    policy_id=f"ppo-{job['critic']}-critic",
                    run_id=run_id, outcome=split,
                    metadata={"recipe": "conditioned-critic", "critic": job["critic"], "family": job["family"],
                              "task": job["task"], "split": split, "context_index": e["context"], "score": e["score"],
                              "length": e["length"],
                              "value_mse": r["value_error"]["mse"][e["context"]] if split == "train" else None},
                ))
        have = set(store.sql("SELECT episode_id FROM episodes WHERE run_id = ?", [run_id]).column("episode_id").to_pylist())
        new = [e for e in eps if e.episode_id not in have]
        if new:
            store.append(new)
        atomic_write_text(marker, str(len(eps)))
        written += len(new)
    return written


def _group(results: list[dict]) -> dict[tuple[str, str], dict[str, list[dict]]]:
    """(family, task) -> critic -> runs (one per seed)."""
    out: dict[tuple[str, str], dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        out[(r["job"]["family"], r["job"]["task"])][r["job"]["critic"]].append(r)
    return out


def _nanmean(values: list[float]) -> float:
    vals = [v for v in values if v is not None and v == v]
    return float(np.mean(vals)) if vals else float("nan")


def _ci(values: list[float]) -> Estimate:
    vals = [v for v in values if v == v]
    return bootstrap_ci(np.asarray(vals), np.mean) if vals else Estimate(float("nan"), float("nan"), float("nan"), 0)


def value_error_rows(results: list[dict]) -> list[dict]:
    """One row per (family, task, context): each critic's MSE over seeds as mean [95% CI]."""
    rows = []
    for (family, task), by_critic in _group(results).items():
        names = next(iter(by_critic.values()))[0]["contexts"]
        for k, name in enumerate(names):
            row: dict[str, Any] = {"family": family if task == family else f"{family}/{task}", "context": name}
            est = {c: _ci([r["value_error"]["mse"][k] for r in runs]) for c, runs in by_critic.items()}
            for c, e in est.items():
                row[f"{c} MSE"] = f"{e.value:.4g} [{e.lo:.4g}, {e.hi:.4g}] n={e.n}"
                row[f"_{c}"] = e
            if "shared" in est and "conditioned" in est:
                row["conditioned / shared"] = est["conditioned"].value / est["shared"].value
            rows.append(row)
    return rows


COLUMNS = ["family", "critic", "seeds", "IQM normalised return (train contexts)", "IQM return (unseen levels)",
           "IQM normalised return during training (AUC)", "mean value MSE", "train time / run (s)", "vs shared"]


def aggregate_rows(cfg: Any, results: list[dict]) -> list[dict]:
    from harnessrl.recipes.conditioned_critic import Job, normalizer

    rows = []
    for (family, task), by_critic in _group(results).items():
        for critic, runs in by_critic.items():
            K = len(runs[0]["contexts"])
            train = np.array([[_nanmean([e["score"] for e in r["train_episodes"] if e["context"] == k]) for k in range(K)]
                              for r in runs])  # (seeds, contexts)
            row: dict[str, Any] = {"family": family if task == family else f"{family}/{task}", "critic": critic,
                                   "seeds": len(runs)}
            est = aggregate_iqm(train)
            row[COLUMNS[3]] = f"{est.value:.3f} [{est.lo:.3f}, {est.hi:.3f}]"
            if runs[0]["test_episodes"]:
                test = np.array([[_nanmean([e["score"] for e in r["test_episodes"]])] for r in runs])
                est = aggregate_iqm(test)
                row[COLUMNS[4]] = f"{est.value:.3f} [{est.lo:.3f}, {est.hi:.3f}]"
            norm = normalizer(cfg, Job(**runs[0]["job"]), runs[0]["contexts"])
            auc = np.array([[_nanmean([norm(k, h[f"return/{k}"]) for h in r["history"]]) for k in range(K)] for r in runs])
            est = aggregate_iqm(np.nan_to_num(auc))
            row[COLUMNS[5]] = f"{est.value:.3f} [{est.lo:.3f}, {est.hi:.3f}]"
            ve = _ci([_nanmean(r["value_error"]["mse"]) for r in runs])
            row[COLUMNS[6]] = f"{ve.value:.4g} [{ve.lo:.4g}, {ve.hi:.4g}]"
            row[COLUMNS[7]] = float(np.mean([r["wall_time"] for r in runs]))
            rows.append(row)
    return rows + family_rows(results)


def _by_seed(runs: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = defaultdict(list)
    for r in runs:
        out[r["job"]["seed"]].append(r)
    return out


def family_rows(results: list[dict]) -> list[dict]:
    """One row per (family with several tasks, critic): IQM over seeds x tasks, as the paper aggregates
    the 16 Procgen games (normalised return on unseen levels) — and the change against the shared critic."""
    rows = []
    families = defaultdict(lambda: defaultdict(list))
    for r in results:
        families[r["job"]["family"]][r["job"]["critic"]].append(r)
    for family, by_critic in families.items():
        tasks = sorted({r["job"]["task"] for runs in by_critic.values() for r in runs})
        if len(tasks) < 2:
            continue
        point = {}
        for critic, runs in by_critic.items():
            seeds = _by_seed(runs)
            col, key = (COLUMNS[4], "test_episodes") if runs[0]["test_episodes"] else (COLUMNS[3], "train_episodes")
            scores = np.array([[_nanmean([e["score"] for r in seeds[s] if r["job"]["task"] == t for e in r[key]])
                                for t in tasks] for s in sorted(seeds)])  # (seeds, tasks)
            est = aggregate_iqm(np.nan_to_num(scores))
            point[critic] = est.value
            rows.append({"family": f"{family} (all {len(tasks)} tasks)", "critic": critic, "seeds": len(seeds),
                         col: f"{est.value:.3f} [{est.lo:.3f}, {est.hi:.3f}]"})
        if point.get("shared"):
            for row in rows[-len(by_critic):]:
                row["vs shared"] = f"{100 * (point[row['critic']] / point['shared'] - 1):+.1f}%"
    return rows


def procgen_scores(results: list[dict], split: str = "test_episodes") -> dict[str, tuple[list[str], np.ndarray]]:
    """critic -> (games, (seeds, games) matrix of each run's mean normalised return on `split`)."""
    out = {}
    runs = [r for r in results if r["job"]["family"] == "procgen"]
    games = sorted({r["job"]["task"] for r in runs})
    for critic in dict.fromkeys(r["job"]["critic"] for r in runs):
        seeds = _by_seed([r for r in runs if r["job"]["critic"] == critic])
        out[critic] = (games, np.array([[_nanmean([e["score"] for r in seeds[s] if r["job"]["task"] == g for e in r[split]])
                                         for g in games] for s in sorted(seeds)]))
    return out


def procgen_rows(cfg: Any, results: list[dict]) -> list[dict]:
    """Per critic: IQM normalised return on unseen (and training) levels over seeds x games with 95% CIs, and
    the change against the shared critic with its own CI, next to the paper's +40.8%."""
    test, train = procgen_scores(results), procgen_scores(results, "train_episodes")
    rows = []
    for critic, (games, scores) in test.items():
        est, fit = aggregate_iqm(np.nan_to_num(scores)), aggregate_iqm(np.nan_to_num(train[critic][1]))
        row: dict[str, Any] = {"critic": critic, "games": ", ".join(games), "seeds": scores.shape[0],
                               "steps / run": cfg.procgen.total_steps, "network": _network(cfg),
                               "IQM normalised return, unseen levels": str(est),
                               "IQM normalised return, training levels": str(fit)}
        if "shared" in test and critic != "shared":
            change = iqm_change(np.nan_to_num(test["shared"][1]), np.nan_to_num(scores))
            row["change vs shared (unseen)"] = _pct(change)
            row["paper: change vs shared"] = f"{100 * PAPER_PROCGEN:+.1f}% ({PAPER_SETUP})"
        rows.append(row)
    return rows


def _network(cfg: Any) -> str:
    from harnessrl.recipes.conditioned_critic import FAMILY_PPO

    return {**FAMILY_PPO["procgen"], **cfg.procgen.ppo}["network"]


def _pct(e: Estimate) -> str:
    if e.value != e.value:
        return "n/a (the shared critic's IQM is at or below the normalisation floor)"
    return f"{100 * e.value:+.1f}% [{100 * e.lo:+.1f}%, {100 * e.hi:+.1f}%]"


def fig_procgen(cfg: Any, results: list[dict]) -> plt.Figure:
    """Bars: IQM normalised return on unseen levels per critic (whiskers: 95% stratified-bootstrap CI);
    dots: each seed x game run; the title puts the measured change next to the paper's."""
    test = procgen_scores(results)
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    for i, (critic, (games, scores)) in enumerate(test.items()):
        est = aggregate_iqm(np.nan_to_num(scores))
        ax.bar(i, est.value, 0.6, yerr=[[est.value - est.lo], [est.hi - est.value]], capsize=4, color=COLORS.get(critic))
        jitter = np.linspace(-0.15, 0.15, scores.size) if scores.size > 1 else np.zeros(1)
        ax.scatter(i + jitter, scores.ravel(), s=9, color="k", zorder=3)
    ax.set_xticks(range(len(test)), list(test))
    ax.axhline(0, color="grey", lw=0.6)
    ax.set_ylabel("normalised return, unseen levels (IQM)")
    change = iqm_change(np.nan_to_num(test["shared"][1]), np.nan_to_num(test["conditioned"][1])) \
        if {"shared", "conditioned"} <= set(test) else None
    here = f"here {_pct(change).split(' [')[0]}" if change is not None and change.value == change.value else "here n/a"
    ax.set_title(f"conditioned vs shared: {here}; paper {100 * PAPER_PROCGEN:+.1f}%", fontsize=9)
    fig.tight_layout()
    return fig


def fig_value_error(rows: list[dict], critics: list[str]) -> plt.Figure:
    fams = list(dict.fromkeys(r["family"] for r in rows))
    fig, axes = plt.subplots(1, len(fams), figsize=(4.2 * len(fams), 3.6), squeeze=False)
    for ax, fam in zip(axes[0], fams):
        sub = [r for r in rows if r["family"] == fam]
        x = np.arange(len(sub))
        width = 0.8 / len(critics)
        for j, c in enumerate(critics):
            est = [r.get(f"_{c}") for r in sub]
            if any(e is None for e in est):
                continue
            mid = np.array([e.value for e in est])
            err = np.array([[e.value - e.lo for e in est], [e.hi - e.value for e in est]])
            ax.bar(x + (j - (len(critics) - 1) / 2) * width, mid, width, yerr=err, capsize=2, color=COLORS.get(c), label=c)
        ax.set_xticks(x, [r["context"] for r in sub], rotation=30, ha="right", fontsize=8)
        _log_if_positive(ax)
        ax.set_title(fam)
        ax.set_ylabel("value MSE vs Monte-Carlo return")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def _log_if_positive(ax: plt.Axes) -> None:
    """Log scale when the plotted data has positive values (a log axis cannot show an all-zero or empty plot)."""
    ys = [y for line in ax.get_lines() for y in np.asarray(line.get_ydata(), dtype=float)]
    ys += [p.get_height() for p in ax.patches]
    if any(y > 0 and np.isfinite(y) for y in ys):
        ax.set_yscale("log")


def _curves(runs: list[dict], key: str) -> tuple[np.ndarray, np.ndarray]:
    steps = np.array([h["global_step"] for h in runs[0]["history"]])
    ys = []
    for r in runs:
        y = np.array([h.get(key, np.nan) for h in r["history"]], dtype=float)
        for i in range(1, len(y)):  # carry the last value over updates in which no episode finished
            if y[i] != y[i]:
                y[i] = y[i - 1]
        ys.append(y[: len(steps)])
    return steps, np.array(ys)


def fig_curves(by_critic: dict[str, list[dict]], title: str, key: str = "return", log: bool = False) -> plt.Figure:
    names = next(iter(by_critic.values()))[0]["contexts"]
    fig, axes = plt.subplots(1, len(names), figsize=(3.4 * len(names), 2.9), squeeze=False)
    for k, (ax, name) in enumerate(zip(axes[0], names)):
        for critic, runs in by_critic.items():
            steps, ys = _curves(runs, f"{key}/{k}")
            with warnings.catch_warnings():  # updates in which no seed has a value yet stay NaN (a gap)
                warnings.simplefilter("ignore", RuntimeWarning)
                mean = np.nanmean(ys, 0)
                sem = np.nanstd(ys, 0) / max(1, np.sqrt(len(ys)))
            ax.plot(steps, mean, color=COLORS.get(critic), label=critic)
            ax.fill_between(steps, mean - 1.96 * sem, mean + 1.96 * sem, color=COLORS.get(critic), alpha=0.2)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("env steps")
        if log:
            _log_if_positive(ax)
    axes[0][0].set_ylabel(key.replace("_", " "))
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def headline(rows: list[dict]) -> str:
    """Per family: in how many contexts the conditioned critic's value error is below the shared one's."""
    parts = []
    for fam in dict.fromkeys(r["family"] for r in rows):
        pairs = [r for r in rows if r["family"] == fam and "_shared" in r and "_conditioned" in r]
        if not pairs:
            continue
        below = sum(r["_conditioned"].value < r["_shared"].value for r in pairs)
        separated = sum(r["_conditioned"].hi < r["_shared"].lo for r in pairs)
        ratios = [r["_conditioned"].value / r["_shared"].value for r in pairs if r["_shared"].value > 0]
        median = f"{np.median(ratios):.3g}" if ratios else "n/a"
        parts.append(f"{fam}: lower in {below} of {len(pairs)} contexts ({separated} with non-overlapping 95% CIs over "
                     f"seeds; median ratio conditioned / shared {median})")
    if not parts:
        return "No shared/conditioned pair was run."
    return ("Value error of the conditioned critic vs the shared one, per family — " + "; ".join(parts) + ". The bandit "
            "offsets and CartPole reward scales are built to conflict (same state, different returns); MiniGrid level "
            "groups differ only in layouts, so their values conflict far less.")


def build_report(cfg: Any, results: list[dict], out_dir: Path, store_path: Path, command: str, wall: float) -> Path:
    rows = value_error_rows(results)
    rep = Report("Conditioned critic: shared vs environment-conditioned value heads", claim=CLAIM,
                 scale_note=f"scale={cfg.scale}: families {', '.join(cfg.families)}; seeds {cfg.seeds}; "
                            f"{len(results)} PPO runs in {wall / 60:.1f} min on {cfg.workers} worker process(es).")
    rep.section("Headline", headline(rows))
    if "procgen" in cfg.families:
        prow = procgen_rows(cfg, results)
        rep.section("Procgen: unseen levels, next to the paper",
                    f"The paper reports {100 * PAPER_PROCGEN:+.1f}% aggregate normalised return on unseen Procgen levels for the "
                    f"conditioned critic over the shared one ({PAPER_SETUP}). This run: {len(prow[0]['games'].split(', '))} "
                    f"game(s), {prow[0]['seeds']} seed(s), {cfg.procgen.total_steps:,} steps per run, network "
                    f"{_network(cfg)}, {cfg.procgen.num_levels} training levels split into {cfg.procgen.num_contexts} "
                    f"contexts, {cfg.eval_episodes} episodes per test env on unseen levels. Each run's score is its mean "
                    "easy-mode normalised return (R - R_min) / (R_max - R_min); IQM over seeds x games with stratified-"
                    "bootstrap 95% CIs; the change's CI resamples each critic's runs independently.")
        rep.figure(fig_procgen(cfg, results), "Procgen: IQM normalised return on unseen levels", name="procgen_unseen")
        rep.table(prow, caption="Procgen, per critic: IQM normalised return [95% CI] and the change against the shared critic")
    rep.section("Per-context value error",
                "Mean squared error of each critic against Monte-Carlo returns on fresh episodes of the trained policy, "
                "per context (bars: mean over seeds, whiskers: 95% bootstrap CI over seeds; log scale). Steps whose "
                "return a time limit or the window cut short by more than 5% of its discounted weight are left out.")
    rep.figure(fig_value_error(rows, list(cfg.critics)), "Per-context value error", name="value_error")
    rep.table([{k: v for k, v in r.items() if not k.startswith("_")} for r in rows],
              caption="Value MSE per context, mean [95% CI]")
    rep.section("Aggregate", "Normalised returns of the trained policies on evaluation episodes (bandit: share of the "
                "best arm's gain; CartPole: return / (500 x reward per step); MiniGrid: its own [0, 1] return; Procgen: "
                "easy-mode (R - R_min) / (R_max - R_min)), and the same normalised return averaged over training (area "
                "under the learning curve: how fast it learned). IQM with stratified-bootstrap 95% CIs over seeds x contexts.")
    agg = aggregate_rows(cfg, results)
    rep.table(agg, caption="Aggregate per family and critic", columns=[c for c in COLUMNS if any(c in r for r in agg)])
    rep.section("Learning curves", "Mean episodic return per context during training; bands: 95% normal CI over seeds.")
    for (family, task), by_critic in _group(results).items():
        name = family if task == family else f"{family}/{task}"
        rep.figure(fig_curves(by_critic, f"{name}: return per context"), f"{name}: learning curves",
                   name=f"curves_{name.replace('/', '_')}")
        rep.figure(fig_curves(by_critic, f"{name}: critic MSE vs GAE returns during training", "value_mse", log=True),
                   f"{name}: value error during training", name=f"value_curves_{name.replace('/', '_')}")
    rep.config(cfg)
    from harnessrl.recipes.conditioned_critic import jobs, ppo_config  # the resolved PPO settings of each family

    first = {j.family: j for j in reversed(jobs(cfg))}
    rep.code(json.dumps({f: ppo_config(cfg, j).model_dump(mode="json") for f, j in first.items()}, indent=1, sort_keys=True),
             heading="PPO settings per family (critic and seed vary per run)")
    rep.reproduce(command, seeds=cfg.seeds, store=store_path)
    return rep.write(out_dir / "report.html")
