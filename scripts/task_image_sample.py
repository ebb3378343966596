"""Build task images for a sample of task folders chosen by rule, and check each one end to end:
the image builds, its tests FAIL untouched, and PASS after the task's reference solution, in the image.

    python scripts/task_image_sample.py path/to/tasks --every 1 [--out sample.json]

The sample is every k-th task folder in name order (no hand-picking). Each row: built / refused
(with the build's reason code), untouched verdict, solved verdict, seconds; the last line is a JSON
summary. Needs root, podman/buildah/debootstrap (scripts/setup-system.sh) and the package registries
for the builds. docs/task-images.md lists the task sources used and the results.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from harnessrl.tasks.base import Task
from harnessrl.tasks.images.build import BuildRefused, build_task, task_build_spec
from harnessrl.tasks.images.grading import grade_in_image
from harnessrl.tasks.images.rootfs import EpisodeRoot
from harnessrl.tasks.images.store import ImageError, ImageStore
from harnessrl.tasks.sandbox import Limits, Sandbox
from harnessrl.tasks.workspace import Workspace


def task_of(folder: Path) -> tuple[Task, str | None]:
    """A Task with the folder's pytest files as its tests, and its reference solution script."""
    tests = folder / "tests"
    files = tuple(sorted(str(p.relative_to(tests)) for p in tests.rglob("test_*.py"))) if tests.is_dir() else ()
    solution = next((p for p in (folder / "solution.sh", folder / "solution" / "solve.sh") if p.exists()), None)
    task = Task(id=f"sample/{folder.name}", name=folder.name, suite="sample", instruction="", root=folder,
                workspace_dir=None, tests_dir=tests, test_files={"requirement": files, "regression": (), "heldout": ()},
                solution=None)
    return task, solution.read_text() if solution else None


def episode(store, built, sandbox, task, script, timeout_s):
    with Workspace.create(None, quota_mb=512, scratch_mb=2048, scratch_inodes=200_000) as ws:
        root = EpisodeRoot.create(store, built.image, ws)
        sandbox.attach_image(ws, root)
        ran = None
        if script is not None:
            ran = sandbox.run(script, ws, cwd=root.workdir, timeout_s=timeout_s)
        return grade_in_image(task, store, built, ws, root, sandbox, timeout_s=timeout_s), ran


def check(folder: Path, store: ImageStore, sandbox: Sandbox, timeout_s: float) -> dict:
    row = {"task": folder.name, "built": False, "untouched": None, "solved": None, "reason": ""}
    t0 = time.perf_counter()
    try:
        built = build_task(store, task_build_spec(folder), say=lambda m: print(m, file=sys.stderr, flush=True))
    except BuildRefused as err:
        return row | {"reason": err.code, "detail": err.reason[:300], "seconds": round(time.perf_counter() - t0, 1)}
    row |= {"built": True, "build_s": built.seconds, "cached": built.cached, "mb": round(built.bytes / 1e6),
            "substitutions": [s["note"] for s in built.stand_ins]}
    task, solution = task_of(folder)
    if not any(task.test_files.values()):
        return row | {"reason": "no_pytest_files", "seconds": round(time.perf_counter() - t0, 1)}
    try:
        untouched, _ = episode(store, built, sandbox, task, None, timeout_s)
        row["untouched"] = "solved" if untouched.solved else untouched.status if untouched.status != "graded" else "failed"
        if solution is None:
            row["reason"] = "no_reference_solution"
        else:
            solved, ran = episode(store, built, sandbox, task, solution, timeout_s)
            row["solved"] = "solved" if solved.solved else solved.status if solved.status != "graded" else "failed"
            if not solved.solved:
                tail = (ran.stderr or ran.stdout)[-200:] if ran else ""
                row["reason"] = "solution_fails" + (f": {solved.why}" if solved.why else "")
                row["solution_tail"] = tail
    except (ImageError, OSError) as err:
        row["reason"] = f"runtime_error: {err}"
    return row | {"seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, help="folders of task folders")
    ap.add_argument("--every", type=int, default=1, help="take every k-th task folder (name order)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds for the solution and for the tests")
    ap.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    args = ap.parse_args()
    tasks = []
    for folder in args.folders:
        found = sorted(p for p in folder.iterdir() if (p / "task.yaml").exists() or (p / "task.toml").exists())
        tasks += found[::args.every]
    store, sandbox = ImageStore.default(), Sandbox(Limits(timeout_s=args.timeout, cpu_s=int(args.timeout)))
    rows = []
    for i, folder in enumerate(tasks, 1):
        row = check(folder, store, sandbox, args.timeout)
        rows.append(row)
        ok = row["built"] and row["untouched"] == "failed" and row["solved"] == "solved"
        print(f"[{i}/{len(tasks)}] {folder.name}: {'OK' if ok else 'NO'} built={row['built']} "
              f"untouched={row['untouched']} solved={row['solved']} {row['reason']} ({row['seconds']} s)", flush=True)
        if args.out:
            args.out.write_text(json.dumps(rows, indent=1))
    good = sum(r["built"] and r["untouched"] == "failed" and r["solved"] == "solved" for r in rows)
    print(json.dumps({"tasks": len(rows), "built": sum(r["built"] for r in rows), "fail_then_pass": good,
                      "share": round(good / max(1, len(rows)), 3)}))


if __name__ == "__main__":
    main()
