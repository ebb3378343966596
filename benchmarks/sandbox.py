"""Sandbox cost: median per-command overhead over a bare subprocess, and reference-solution
episodes per minute over a whole suite with 1 vs 2 workers.

Overhead (target <= 15 ms): `/bin/true` and `python -c pass`, each run bare, in a minimal
bubblewrap call as measured in HARNESSES.md (the anchor: `bwrap --unshare-all --die-with-parent
... /bin/true` as the caller, no uid drop, no limits), and through harnessrl's full chain
(sandbox_cmdline.py: the episode's cgroup joined, nsenter into the private mount namespace for
the interpreter and down to the workspace uid, bwrap with capabilities dropped and the seccomp
filter, a shell as pid 1 setting the limits, status pipe, output capture). Medians of --repeats
runs, interleaved. The anchor's reaper sometimes outlives bwrap (after 5 of 50 runs on the
development VM), so part of its teardown can fall outside its timing; ours never does (the
shell is pid 1 and bwrap waits for it).

Episodes per minute: what exists today is the task side of an episode, so an "episode" here
is a reference-solution episode without a policy or harness: a fresh workspace copy (+ setup.sh),
the reference solution replayed (edits, or solve.sh in the sandbox), the hidden tests run in the
sandbox and scored. Harness/policy turns come later (issue 5, part 3) and will add their cost.

Run: .venv/bin/python benchmarks/sandbox.py [--repeats 200] [--suite code-v1] [--tasks N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from harnessrl.commands.common import progress
from harnessrl.tasks.loaders import load_suite
from harnessrl.tasks.runtime import TaskRuntime
from harnessrl.tasks.sandbox import Sandbox, bwrap_path
from harnessrl.tasks.workspace import Workspace

ANCHOR_BWRAP = ["--unshare-all", "--die-with-parent", "--new-session", "--clearenv", "--ro-bind", "/usr", "/usr",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                "--ro-bind", "/etc", "/etc", "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev", "--chdir", "/"]


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def overhead(repeats: int) -> dict[str, float]:
    sandbox = Sandbox()
    python = sys.executable
    anchor_py = [*ANCHOR_BWRAP, "--ro-bind", sys.prefix, sys.prefix, "--ro-bind", sys.base_prefix, sys.base_prefix]
    runs = {
        "true_bare": lambda: subprocess.run(["/bin/true"], check=True),
        "true_anchor": lambda: subprocess.run([bwrap_path(), *ANCHOR_BWRAP, "/bin/true"], check=True),
        "py_bare": lambda: subprocess.run([python, "-c", "pass"], check=True),
        "py_anchor": lambda: subprocess.run([bwrap_path(), *anchor_py, python, "-c", "pass"], check=True),
    }
    times: dict[str, list[float]] = {k: [] for k in [*runs, "true_ours", "py_ours"]}
    with Workspace.create(None, quota_mb=16) as ws, progress() as bar:
        runs["true_ours"] = lambda: _check(sandbox.run(["/bin/true"], ws))
        runs["py_ours"] = lambda: _check(sandbox.run(["python", "-c", "pass"], ws))
        job = bar.add_task("per-command overhead", total=repeats)
        for _ in range(repeats):
            for name, fn in runs.items():  # interleaved, so load changes hit every variant alike
                times[name].append(timed(fn))
            bar.advance(job)
    return {k: statistics.median(v) for k, v in times.items()}


def _check(result) -> None:
    if not result.ok:
        raise RuntimeError(f"sandboxed command failed: {result.status} {result.detail} {result.stderr}")


def reference_episode(args: tuple[str, str]) -> tuple[str, bool]:
    suite_name, task_name = args
    task = load_suite(suite_name)[task_name]
    with TaskRuntime(task, Sandbox()) as rt:
        rt.apply_solution()
        return task.id, rt.score().success


def episodes_per_minute(suite_name: str, names: list[str], workers: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    solved = 0
    with ProcessPoolExecutor(workers) as pool, progress() as bar:
        job = bar.add_task(f"{suite_name}: reference episodes, {workers} worker(s)", total=len(names))
        for _, ok in pool.map(reference_episode, [(suite_name, n) for n in names]):
            solved += ok
            bar.advance(job)
    return len(names) / ((time.perf_counter() - t0) / 60), solved


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--suite", default="code-v1")
    ap.add_argument("--tasks", type=int, default=0, help="first N tasks only (0 = the whole suite)")
    args = ap.parse_args()
    med = overhead(args.repeats)
    ours_ms = med["true_ours"] - med["true_bare"]
    anchor_ms = med["true_anchor"] - med["true_bare"]
    print(f"/bin/true        bare {med['true_bare']:6.2f} ms | minimal bwrap {med['true_anchor']:6.2f} ms | "
          f"harnessrl sandbox {med['true_ours']:6.2f} ms")
    print(f"python -c pass   bare {med['py_bare']:6.2f} ms | minimal bwrap {med['py_anchor']:6.2f} ms | "
          f"harnessrl sandbox {med['py_ours']:6.2f} ms")
    names = [t.name for t in load_suite(args.suite)]
    names = names[: args.tasks] if args.tasks else names
    epm1, solved1 = episodes_per_minute(args.suite, names, 1)
    epm2, solved2 = episodes_per_minute(args.suite, names, 2)
    print(f"{args.suite}: {len(names)} reference-solution episodes; 1 worker {epm1:.1f}/min ({solved1} solved), "
          f"2 workers {epm2:.1f}/min ({solved2} solved); os.cpu_count()={os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(json.dumps({
        "benchmark": "sandbox_overhead", "ours": round(ours_ms, 2), "anchor": round(anchor_ms, 2),
        "unit": "ms median per-command overhead over a bare subprocess (/bin/true)",
        "ratio": round(ours_ms / anchor_ms, 2) if anchor_ms > 0 else None, "target": "ours <= 15 ms",
        "python_overhead_ms": round(med["py_ours"] - med["py_bare"], 2),
        "python_anchor_overhead_ms": round(med["py_anchor"] - med["py_bare"], 2),
        "suite": args.suite, "episodes": len(names), "solved_1w": solved1, "solved_2w": solved2,
        "episodes_per_min_1w": round(epm1, 1), "episodes_per_min_2w": round(epm2, 1),
        "speedup_2w": round(epm2 / epm1, 2),
    }))


if __name__ == "__main__":
    main()
