"""Cost of grading in its own trust domain, against plain pytest outside any sandbox.

Ours: `score_workspace` on a solved episode's workspace — stop every agent process, copy /app
into a fresh workspace under a new uid, run the hidden tests in a fresh sandbox (seccomp,
cgroup, the grader's init and report plugin, the agent's modules imported in the bridge's child
process), read and check the report.
Anchor: the same tests run by `python -m pytest` directly on the host, over a plain copy of the
same files (no sandbox, no copy under another uid, no plugin) — what an unprotected grader costs.

Both are timed in the same run, interleaved, for --repeats rounds per task; medians per task,
then the median of the per-task ratios. Target: ratio <= 1.5.

Run: .venv/bin/python benchmarks/grading.py [--suite code-v1] [--tasks 5] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harnessrl.tasks.base import TEST_GROUPS
from harnessrl.tasks.loaders import load_suite
from harnessrl.tasks.runtime import TaskRuntime
from harnessrl.tasks.sandbox import Sandbox
from harnessrl.tasks.scoring import score_workspace


def plain_pytest(task, app: Path, tests: Path) -> float:
    targets = [str(tests / f) for g in TEST_GROUPS for f in task.test_files.get(g, ())]
    env = {**os.environ, **task.env, "PYTHONPATH": str(app), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--rootdir={tests}",
                        "--import-mode=importlib", *targets], cwd=app, env=env, capture_output=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{task.id}: plain pytest failed on the solved workspace:\n{r.stdout.decode()[-2000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", default="code-v1")
    ap.add_argument("--tasks", type=int, default=5, help="first N pytest tasks of the suite")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    sandbox = Sandbox()
    tasks = [t for t in load_suite(args.suite) if t.test_runner == "pytest"][: args.tasks]
    rows = []
    for task in tasks:
        with TaskRuntime(task, sandbox) as rt, tempfile.TemporaryDirectory() as tmp:
            rt.apply_solution()
            app, tests = Path(tmp) / "app", Path(tmp) / "tests"
            shutil.copytree(rt.workspace.root, app, symlinks=True)
            shutil.copytree(task.tests_dir, tests)
            ours, anchor = [], []
            score_workspace(task, rt.workspace, sandbox)  # warm-up: the interpreter's pages, the seccomp program
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                score = score_workspace(task, rt.workspace, sandbox)
                ours.append(time.perf_counter() - t0)
                if not score.success:
                    raise RuntimeError(f"{task.id}: the solved workspace did not grade as solved: {score.summary()}")
                anchor.append(plain_pytest(task, app, tests))
        o, a = statistics.median(ours) * 1000, statistics.median(anchor) * 1000
        rows.append((task.name, o, a))
        print(f"{task.name:32s} grading {o:7.1f} ms | plain pytest {a:7.1f} ms | ratio {o / a:4.2f}")
    ratio = statistics.median(o / a for _, o, a in rows)
    print(f"load average {os.getloadavg()[0]:.1f}, os.cpu_count()={os.cpu_count()}")
    print(json.dumps({
        "benchmark": "grading_one_episode", "ours": round(statistics.median(o for _, o, _ in rows), 1),
        "anchor": round(statistics.median(a for _, _, a in rows), 1),
        "unit": "ms median wall time to grade one solved episode (ours: stop agent + copy under a new uid + "
                "sandboxed pytest with the report plugin and the agent-call bridge; anchor: plain pytest on the host)",
        "ratio": round(ratio, 2), "target": "ratio <= 1.5", "suite": args.suite, "tasks": len(rows),
        "repeats": args.repeats,
    }))


if __name__ == "__main__":
    main()
