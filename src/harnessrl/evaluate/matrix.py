"""Cross-harness matrices from episodes: the task x harness matrix and the harness summary.

    cells = cell_table(episodes, ks=(1, 5))          one row per (task, harness)
    summary = harness_summary(episodes, ks=(1, 5))   one row per harness, CIs over tasks

Per cell: episodes n, solved c, pass@1 = c/n, unbiased pass@k (k <= n), mean turns, mean
tokens, failure-mode counts. Per harness: pass@1 and pass@k averaged over its tasks with
percentile-bootstrap 95% CIs over tasks (evaluate.stats), mean turns/tokens per episode,
format errors per episode, and the fraction of episodes showing each failure mode.

Failure modes of an unsolved episode (an episode can show several):
  format_error          the run ended on malformed output (status format_error)
  timeout               the run ended on a time limit (status timeout)
  turn_limit            the run hit the harness's turn cap
  dropped_requirement   a requirement test failed
  broke_existing        a regression test failed
  test_error / crash    no verdict: the tests or the episode itself broke
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from harnessrl.episode import Episode
from harnessrl.evaluate.stats import bootstrap_ci, pass_at_k, pass_at_k_ci

FAILURE_MODES = ("format_error", "timeout", "turn_limit", "dropped_requirement", "broke_existing", "failed_heldout", "test_error", "crash")


def failure_modes(ep: Episode) -> list[str]:
    if ep.success:
        return []
    modes = [ep.status] if ep.status in ("format_error", "timeout", "turn_limit", "crash") else []
    for part in (ep.outcome or "").split("+"):
        if part in ("dropped_requirement", "broke_existing", "failed_heldout", "test_error") and part not in modes:
            modes.append(part)
    return modes or ["failed"]


def _group(episodes: Iterable[Episode]) -> dict[tuple[str, str], list[Episode]]:
    cells: dict[tuple[str, str], list[Episode]] = defaultdict(list)
    for ep in episodes:
        cells[(ep.context.task_id, ep.context.harness_id)].append(ep)
    return cells


def cell_table(episodes: Iterable[Episode], ks: Sequence[int] = (1,)) -> list[dict[str, Any]]:
    rows = []
    for (task, harness), eps in sorted(_group(episodes).items()):
        n, c = len(eps), sum(e.success for e in eps)
        row: dict[str, Any] = {"task_id": task, "harness_id": harness, "n": n, "solved": c, "pass@1": c / n}
        for k in ks:
            if k > 1:
                row[f"pass@{k}"] = float(pass_at_k(n, c, k)) if k <= n else float("nan")
        row["mean_turns"] = float(np.mean([e.num_turns for e in eps]))
        row["mean_tokens"] = float(np.mean([e.tokens_in + e.tokens_out for e in eps]))
        row["format_errors"] = float(np.mean([e.format_errors for e in eps]))
        modes = [m for e in eps for m in failure_modes(e)]
        for m in FAILURE_MODES:
            row[m] = modes.count(m)
        rows.append(row)
    return rows


def harness_summary(episodes: Iterable[Episode], ks: Sequence[int] = (1,), seed: int = 0,
                    n_resamples: int = 2000) -> list[dict[str, Any]]:
    by_harness: dict[str, list[Episode]] = defaultdict(list)
    for ep in episodes:
        by_harness[ep.context.harness_id].append(ep)
    rows = []
    for harness, eps in sorted(by_harness.items()):
        cells = _group(eps)
        n = np.array([len(v) for v in cells.values()])
        c = np.array([sum(e.success for e in v) for v in cells.values()])
        p1 = bootstrap_ci(c / n, np.mean, n_resamples=n_resamples, seed=seed)
        row: dict[str, Any] = {"harness_id": harness, "tasks": len(cells), "episodes": len(eps),
                               "pass@1": p1.value, "pass@1_lo": p1.lo, "pass@1_hi": p1.hi}
        for k in ks:
            if k > 1:
                ok = n >= k
                est = pass_at_k_ci(n[ok], c[ok], k, n_resamples=n_resamples, seed=seed) if ok.any() else None
                row[f"pass@{k}"] = est.value if est else float("nan")
                row[f"pass@{k}_lo"] = est.lo if est else float("nan")
                row[f"pass@{k}_hi"] = est.hi if est else float("nan")
        row["mean_turns"] = float(np.mean([e.num_turns for e in eps]))
        row["mean_tokens"] = float(np.mean([e.tokens_in + e.tokens_out for e in eps]))
        row["format_errors_per_episode"] = float(np.mean([e.format_errors for e in eps]))
        for m in FAILURE_MODES:
            row[f"rate_{m}"] = float(np.mean([m in failure_modes(e) for e in eps]))
        rows.append(row)
    return rows


def pivot(cells: list[dict[str, Any]], value: str = "pass@1") -> tuple[list[str], list[str], np.ndarray]:
    """(task ids, harness ids, tasks x harnesses array) with NaN where a cell has no episodes."""
    tasks = sorted({r["task_id"] for r in cells})
    harnesses = sorted({r["harness_id"] for r in cells})
    grid = np.full((len(tasks), len(harnesses)), np.nan)
    for r in cells:
        grid[tasks.index(r["task_id"]), harnesses.index(r["harness_id"])] = r[value]
    return tasks, harnesses, grid


def heatmap(cells: list[dict[str, Any]], out_of_scope: Sequence[tuple[str, str, str]] = (), title: str = ""):
    """A task x harness pass@1 heatmap; grey = out of scope (or not run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks, harnesses, grid = pivot(cells)
    for t, h, _ in out_of_scope:
        if t not in tasks:
            tasks.append(t)
            grid = np.vstack([grid, np.full((1, grid.shape[1]), np.nan)])
        if h not in harnesses:
            harnesses.append(h)
            grid = np.hstack([grid, np.full((grid.shape[0], 1), np.nan)])
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * len(harnesses), 1.0 + 0.22 * len(tasks)))
    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="#d0d0d0")
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(harnesses)), harnesses, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(len(tasks)), [t.split("/")[-1] for t in tasks], fontsize=6)
    ax.set_title(title or "pass@1 by task x harness (grey: out of scope)", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.03)
    fig.tight_layout()
    return fig
