"""Oracle episodes per minute over a whole suite, through harnesses, with 1 vs 2 workers.

Each episode is complete: a fresh sandboxed workspace, the oracle's turns rendered in the
harness's own syntax and executed (edits, lint, shell commands, tmux keystrokes), the hidden
tests run in the sandbox and scored, the Episode written to a record store. Both runs go
through `harnessrl.evaluate.run_eval` (the local process pool); the anchor is the same suite
with 1 worker, measured in the same run. On 2 idle cores the 2-worker run should approach 2x
(the target asks for 0.75 x min(workers, cores)); on a busy machine the ratio says little.

Run: .venv/bin/python benchmarks/oracle_throughput.py [--suite code-v1] [--harness all] [--workers 2]
Last line: JSON {"benchmark", "ours", "anchor", "unit", "ratio", "target"}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

# this folder holds benchmarks/miniwob.py, which would shadow the `miniwob` package
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

from harnessrl.evaluate.run import plan_eval, run_eval  # noqa: E402
from harnessrl.records import RecordStore  # noqa: E402


def measure(suite: str, harnesses: list[str], workers: int, tasks: list[str] | None) -> tuple[float, int, int, float]:
    plan = plan_eval(suite, harnesses, seeds=1, tasks=tasks)
    with tempfile.TemporaryDirectory(prefix="oracle-bench-") as d:
        t0 = time.perf_counter()
        result = run_eval("oracle", plan, RecordStore(os.path.join(d, "store")), workers=workers)
        wall = time.perf_counter() - t0
    solved = sum(e.success for e in result.episodes)
    return len(result.episodes) / wall * 60, len(result.episodes), solved, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default="code-v1")
    ap.add_argument("--harness", default="all", help="'all' or comma-separated harness ids")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tasks", type=int, default=0, help="only the first N tasks (0 = the whole suite)")
    args = ap.parse_args()
    harnesses = [h for h in args.harness.split(",") if h]
    tasks = None
    if args.tasks:
        from harnessrl.rollout.suites import load_suite, task_id

        tasks = [task_id(t) for t in list(load_suite(args.suite))[: args.tasks]]
    load = os.getloadavg()[0]
    one, n1, s1, w1 = measure(args.suite, harnesses, 1, tasks)
    print(f"1 worker:  {n1} episodes ({s1} solved) in {w1:.1f} s = {one:.1f} episodes/min")
    many, n2, s2, w2 = measure(args.suite, harnesses, args.workers, tasks)
    print(f"{args.workers} workers: {n2} episodes ({s2} solved) in {w2:.1f} s = {many:.1f} episodes/min")
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at end")
    if s1 != n1 or s2 != n2:
        print("WARNING: the oracle did not solve every cell")
    print(json.dumps({"benchmark": f"oracle_throughput[{args.suite},{args.harness}]", "ours": round(many, 2),
                      "anchor": round(one, 2), "unit": f"oracle episodes/min ({args.workers} workers vs 1)",
                      "ratio": round(many / one, 3),
                      "target": f"ratio >= {0.75 * min(args.workers, os.cpu_count() or 1):.2f} on idle cores"}))


if __name__ == "__main__":
    main()
