"""The zero-shot matrix of docs/real-model.md, read back from record stores.

Episodes are stored as their chunk finishes, so this also reads a run that was stopped part way.
Per suite x harness: solve rate (pass@1, bootstrap 95% CI over tasks), the rate of episodes with
at least one format error (95% CI over episodes), format errors and turns per episode, and the
most common outcome; one figure of both rates.

    python scripts/zero_shot_matrix.py STORE [STORE ...] [--runs ID,ID] [--figure out.png]
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict

import numpy as np


def suite_of(task_id: str) -> str:
    return task_id.split("/")[0] if "/" in task_id else "miniwob"  # MiniWoB task ids carry no suite prefix


def rows(episodes) -> list[dict]:
    from harnessrl.evaluate.matrix import harness_summary
    from harnessrl.evaluate.stats import bootstrap_ci

    by = defaultdict(list)
    for e in episodes:
        by[suite_of(e.context.task_id)].append(e)
    out = []
    for suite in sorted(by):
        for r in harness_summary(by[suite], seed=0):
            h = [e for e in by[suite] if e.context.harness_id == r["harness_id"]]
            fe = bootstrap_ci(np.array([float(e.format_errors > 0) for e in h]), np.mean, seed=0)
            outcome, n = Counter(e.outcome for e in h).most_common(1)[0]
            out.append({"suite": suite, "harness": r["harness_id"], "tasks": r["tasks"], "episodes": r["episodes"],
                        "solve": (r["pass@1"], r["pass@1_lo"], r["pass@1_hi"]), "format": (fe.value, fe.lo, fe.hi),
                        "format_per_episode": r["format_errors_per_episode"], "turns": r["mean_turns"],
                        "outcome": f"{outcome} ({n}/{len(h)})"})
    return out


def figure(table: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['suite']}\n{r['harness']}\n(n={r['episodes']})" for r in table]
    x = np.arange(len(table))
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(table)), 3.6))
    for off, key, name, colour in ((-0.2, "solve", "solve rate", "#2b7bba"), (0.2, "format", "episodes with a format error", "#e6550d")):
        v = np.array([r[key] for r in table])
        ax.bar(x + off, v[:, 0], 0.4, yerr=[v[:, 0] - v[:, 1], v[:, 2] - v[:, 0]], capsize=2, label=name, color=colour)
        for xi, vi, hi in zip(x + off, v[:, 0], v[:, 2]):  # a rate of 0 draws no bar: print every value
            ax.text(xi, hi + 0.02, f"{vi:.2f}", ha="center", va="bottom", fontsize=6)
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylim(0, 1.3)
    ax.set_ylabel("rate (95% CI)")
    ax.set_title("SmolLM2-135M-Instruct zero-shot, greedy: solve rate and format-error rate per harness")
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    fig.savefig(path, dpi=100, bbox_inches="tight")


def main() -> None:
    from harnessrl.records import RecordStore

    ap = argparse.ArgumentParser()
    ap.add_argument("stores", nargs="+")
    ap.add_argument("--runs", default="", help="only these run ids (comma-separated)")
    ap.add_argument("--figure", default="")
    args = ap.parse_args()
    keep = {r for r in args.runs.split(",") if r}
    eps = [e for s in args.stores for e in RecordStore(s, create=False).episodes() if not keep or e.run_id in keep]
    table = rows(eps)
    print(f"{len(eps)} episodes")
    print("| suite | harness | tasks | episodes | solve rate [95% CI] | format-error rate [95% CI] | format errors / episode | turns / episode | most common outcome |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in table:
        s, f = r["solve"], r["format"]
        print(f"| {r['suite']} | {r['harness']} | {r['tasks']} | {r['episodes']} | {s[0]:.2f} [{s[1]:.2f}, {s[2]:.2f}] | "
              f"{f[0]:.2f} [{f[1]:.2f}, {f[2]:.2f}] | {r['format_per_episode']:.2f} | {r['turns']:.1f} | {r['outcome']} |")
    if args.figure:
        figure(table, args.figure)
        print("figure ->", args.figure)


if __name__ == "__main__":
    main()
