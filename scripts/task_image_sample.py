"""Build task images for a sample of task folders chosen by rule, and check each one end to end:
the image builds, its tests FAIL untouched, and PASS after the task's reference solution, in the image.

    python scripts/task_image_sample.py path/to/tasks --every 1 [--out sample.json]

The sample is every k-th task folder (the first, the k+1-th, ...) of all the given folders' task
folders pooled in the order given, each folder's in name order (no hand-picking). Each row: built / refused
(with the build's reason code), untouched verdict, solved verdict, seconds; the last line is a JSON
summary. A Harbor task is graded by its tests/test.sh (reward.txt / reward.json), a Terminal-Bench
task by its pytest files. Needs root, podman/buildah/debootstrap (scripts/setup-system.sh) and the package registries
for the builds. docs/task-images.md lists the task sources used and the results.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from harnessrl.tasks.images.build import BuildRefused, build_task, task_build_spec
from harnessrl.tasks.images.runtime import ImageTaskRuntime
from harnessrl.tasks.images.store import ImageError, ImageStore
from harnessrl.tasks.images.tasks import load_image_task
from harnessrl.tasks.sandbox import Limits, Sandbox


def verdict(score) -> str:
    """solved / failed (graded, not solved) / the reason it was not graded."""
    if score.success:
        return "solved"
    return score.outcome if score.outcome in ("test_error", "grader_tamper") else "failed"


def check(folder: Path, store: ImageStore, sandbox: Sandbox, timeout_s: float) -> dict:
    """Build, grade untouched, grade after the reference solution: each in a fresh episode, through
    the same ImageTaskRuntime an eval uses (ENTRYPOINT started, solution/ bound at /solution)."""
    row = {"task": folder.name, "built": False, "untouched": None, "solved": None, "reason": ""}
    t0 = time.perf_counter()
    try:
        built = build_task(store, task_build_spec(folder), say=lambda m: print(m, file=sys.stderr, flush=True))
    except BuildRefused as err:
        return row | {"reason": err.code, "detail": err.reason[:300], "seconds": round(time.perf_counter() - t0, 1)}
    row |= {"built": True, "build_s": built.seconds, "cached": built.cached, "mb": round(built.bytes / 1e6),
            "substitutions": [s["note"] for s in built.stand_ins]}
    try:
        task = load_image_task(folder, "sample")
    except ValueError as err:
        return row | {"reason": str(err).split(":")[0], "detail": str(err)[:300],
                      "seconds": round(time.perf_counter() - t0, 1)}
    row["grader"] = "tests/test.sh" if task.test_runner == "script" else "pytest files"
    try:
        with ImageTaskRuntime(task, sandbox, store=store, built=built) as rt:
            untouched = rt.score()
        row["untouched"] = verdict(untouched)
        if untouched.outcome in ("test_error", "grader_tamper"):
            row["untouched_detail"] = untouched.detail[:300]
        if task.solution is None:
            row["reason"] = "no_reference_solution"
        else:
            with ImageTaskRuntime(task, sandbox, store=store, built=built) as rt:
                ran = rt.apply_solution(timeout_s=timeout_s)
                solved = rt.score()
            row["solved"] = verdict(solved)
            if not solved.success:
                row["reason"] = "solution_fails" + (f": {solved.detail[:200]}" if solved.detail else "")
                row["solution_tail"] = ((ran.stderr or ran.stdout)[-300:] if ran else "")
                row["test_tail"] = (solved.run.stdout + solved.run.stderr)[-400:]
    except (ImageError, OSError) as err:
        row["reason"] = f"runtime_error: {err}"
    return row | {"seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, help="folders of task folders")
    ap.add_argument("--every", type=int, default=1, help="take every k-th task folder (name order)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds for the solution and for the tests")
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    ap.add_argument("--stop-at", default=None, help="HH:MM (UTC): start no task after this time; the rest are not run")
    args = ap.parse_args()
    found = []
    for folder in args.folders:  # the task folders of every given folder, pooled, in name order
        found += sorted(p for p in folder.iterdir() if (p / "task.yaml").exists() or (p / "task.toml").exists())
    tasks = found[::args.every]
    store, sandbox = ImageStore.default(), Sandbox(Limits(timeout_s=args.timeout, cpu_s=int(args.timeout)))
    rows = []
    for i, folder in enumerate(tasks, 1):
        if args.stop_at and time.strftime("%H:%M", time.gmtime()) >= args.stop_at:
            print(f"stopped at {args.stop_at} UTC: {len(tasks) - i + 1} tasks not run", flush=True)
            break
        row = check(folder, store, sandbox, args.timeout)
        rows.append(row)
        ok = row["built"] and row["untouched"] == "failed" and row["solved"] == "solved"
        print(f"[{i}/{len(tasks)}] {folder.name}: {'OK' if ok else 'NO'} built={row['built']} "
              f"untouched={row['untouched']} solved={row['solved']} {row['reason']} ({row['seconds']} s)", flush=True)
        if args.out:
            args.out.write_text(json.dumps(rows, indent=1))
    good = sum(r["built"] and r["untouched"] == "failed" and r["solved"] == "solved" for r in rows)
    print(json.dumps({"sampled": len(tasks), "tasks": len(rows), "built": sum(r["built"] for r in rows), "fail_then_pass": good,
                      "share": round(good / max(1, len(rows)), 3)}))


if __name__ == "__main__":
    main()
