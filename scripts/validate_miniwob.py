"""Full validation of the MiniWoB++ oracles: every oracle task x N seeds, at the env level and
through each MiniWoB harness (the oracle speaking the harness's own syntax), in real Chromium.

The tests run a subset (2 seeds env-level, 1 seed per harness); this is the done-when check
of issue 6: success >= 0.95 in every cell. Exit code 1 if a cell falls short.

Run: .venv/bin/python scripts/validate_miniwob.py [--seeds 20] [--browsers 2] [--workers 2]
     [--harness miniwob-html,miniwob-axtree] [--tasks a,b] [--store runs/miniwob-validation]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from harnessrl.envs.miniwob import ORACLES, BrowserPool, MiniWoBTask, run_oracle_episode
from harnessrl.harness.base import load_spec
from harnessrl.policies.registry import PolicySpec
from harnessrl.records import RecordStore
from harnessrl.rollout.backends import Job, run_jobs

THRESHOLD = 0.95


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--browsers", type=int, default=2, help="browsers for the env-level run")
    ap.add_argument("--workers", type=int, default=2, help="worker processes for the harness-level run")
    ap.add_argument("--harness", default="miniwob-html,miniwob-axtree")
    ap.add_argument("--tasks", default="", help="default: every task with an oracle")
    ap.add_argument("--store", default="", help="also append every episode to this record store")
    args = ap.parse_args()
    console = Console()
    tasks = [t for t in args.tasks.split(",") if t] or sorted(ORACLES)
    harnesses = [h for h in args.harness.split(",") if h]
    seeds = list(range(args.seeds))
    episodes = []
    t0 = time.perf_counter()

    with Progress(console=console) as progress:
        bar = progress.add_task("env level", total=len(tasks) * len(seeds))
        with BrowserPool(args.browsers) as pool:
            for task in tasks:
                done = pool.map(lambda env, seed: run_oracle_episode(env, seed), [(task, s) for s in seeds])
                episodes += done
                progress.advance(bar, len(done))
        jobs = [Job(load_spec(h), MiniWoBTask(t), s) for h in harnesses for t in tasks for s in seeds]
        bar = progress.add_task("through harnesses", total=len(jobs))
        episodes += run_jobs(PolicySpec.parse("oracle"), jobs, backend="local", workers=args.workers,
                             run_id="miniwob-validation", on_chunk=lambda eps: progress.advance(bar, len(eps)))
    wall = time.perf_counter() - t0

    cells: dict[tuple[str, str], list] = defaultdict(list)
    for e in episodes:
        cells[(e.context.task_id.removeprefix("miniwob/"), e.context.harness_id or "env")].append(e)
    columns = ["env", *harnesses]
    table = Table(title=f"MiniWoB++ oracle success over {args.seeds} seeds (threshold {THRESHOLD})")
    table.add_column("task")
    for c in columns:
        table.add_column(c, justify="right")
    short = []
    for task in tasks:
        row = [task]
        for c in columns:
            eps = cells[(task, c)]
            rate = sum(e.success for e in eps) / len(eps)
            row.append(f"{rate:.2f} ({sum(e.num_turns for e in eps) / len(eps):.1f} steps)")
            if rate < THRESHOLD:
                short.append((task, c, rate))
        table.add_row(*row)
    console.print(table)
    if args.store:
        RecordStore(args.store).append(episodes)
    summary = {
        "tasks": len(tasks), "seeds": args.seeds, "columns": columns, "episodes": len(episodes),
        "min_success": min(sum(e.success for e in eps) / len(eps) for eps in cells.values()),
        "mean_reward": sum(e.reward for e in episodes) / len(episodes),
        "mean_raw_reward": sum(e.raw_reward or 0.0 for e in episodes) / len(episodes),
        "cells_below_threshold": short, "wall_s": round(wall, 1),
    }
    console.print(json.dumps(summary))
    raise SystemExit(1 if short else 0)


if __name__ == "__main__":
    main()
