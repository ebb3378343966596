"""Task images: per-command overhead in an image vs the host jail vs bare, and a task image's build time.

Overhead: `/bin/true` run (a) bare (subprocess), (b) in the host jail (harnessrl's Sandbox on a plain
workspace), (c) in a task image's episode root under the same jail (tasks/images/rootfs.py), and
(d) the anchor, `podman exec` into a running container of the same image (runc, what a Docker-style
harness pays per command). Medians of --repeats interleaved runs; overhead = median - bare median.
`ratio` = image overhead / host-jail overhead (target <= 1.5).

Build: a small task (FROM debian:13, apt-get install jq, COPY, ENV, WORKDIR) built cold (a fresh
nonce in its Dockerfile, so no step is cached; the stand-in base is already built) and warm (the
same inputs again: a cache hit on the build key).

Run: python benchmarks/task_image.py [--repeats 100]   (root, podman/buildah; builds need the Debian mirror)
     python benchmarks/task_image.py --image localhost/harnessrl-task/venv-path:KEY   (no build, offline)
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from harnessrl.tasks.images import bases
from harnessrl.tasks.images.build import build_task, task_build_spec
from harnessrl.tasks.images.rootfs import EpisodeRoot
from harnessrl.tasks.images.store import ULIMITS, ImageStore
from harnessrl.tasks.sandbox import Limits, Sandbox
from harnessrl.tasks.workspace import Workspace

DOCKERFILE = """FROM debian:13
RUN echo {nonce} > /nonce
RUN apt-get update && apt-get install -y --no-install-recommends jq && rm -rf /var/lib/apt/lists/*
ENV MODE=bench
WORKDIR /app
COPY input.txt /app/input.txt
"""


def build_times(store: ImageStore) -> tuple[float, float, str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        task = Path(tmp) / "bench-task"
        task.mkdir()
        (task / "task.yaml").write_text("instruction: benchmark\n")
        (task / "Dockerfile").write_text(DOCKERFILE.format(nonce=secrets.token_hex(8)))
        (task / "input.txt").write_text("1\n2\n")
        t0 = time.perf_counter()
        built = build_task(store, task_build_spec(task), say=lambda m: None)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = build_task(store, task_build_spec(task), say=lambda m: None)
        warm = time.perf_counter() - t0
        assert again.cached and again.image == built.image
        return cold, warm, built.image, built.key


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def overhead(store: ImageStore, image: str, repeats: int) -> dict[str, float]:
    sandbox = Sandbox(Limits(timeout_s=30, cpu_s=30))
    times: dict[str, list[float]] = {"bare": [], "jail": [], "image": [], "podman_exec": []}
    name = f"harnessrl-bench-{secrets.token_hex(4)}"
    store.podman("run", "-d", "--name", name, "--network", "none", *ULIMITS, image, "sleep", "3600")
    try:
        with Workspace.create(None, quota_mb=32) as plain, Workspace.create(None, quota_mb=32) as ws:
            root = EpisodeRoot.create(store, image, ws)
            sandbox.attach_image(ws, root)
            assert sandbox.run("/bin/true", ws, cwd=root.workdir).exit_code == 0
            exec_argv = ["podman", *store._storage_flags(), "--runtime", "runc", "--cgroup-manager", "cgroupfs",
                         "--events-backend", "file", "exec", name, "/bin/true"]
            env = store._env()
            for _ in range(repeats):
                times["bare"].append(timed(lambda: subprocess.run(["/bin/true"], check=True)))
                times["jail"].append(timed(lambda: sandbox.run("/bin/true", plain)))
                times["image"].append(timed(lambda: sandbox.run("/bin/true", ws, cwd=root.workdir)))
                times["podman_exec"].append(timed(lambda: subprocess.run(exec_argv, env=env, check=True,
                                                                         stdout=subprocess.DEVNULL)))
    finally:
        store.podman("rm", "--force", name, check=False)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--image", help="an image already built (no ENTRYPOINT): overhead only, no build (offline)")
    args = ap.parse_args()
    store = ImageStore.default()
    if args.image:
        cold = warm = float("nan")
        med = overhead(store, args.image, args.repeats)
    else:
        bases.build_stand_in(store, bases.resolve("debian:13"), say=lambda m: None)
        cold, warm, image, key = build_times(store)
        print(f"build: cold {cold:.1f} s, warm (cache hit) {warm:.2f} s")
        try:
            med = overhead(store, image, args.repeats)
        finally:  # the benchmark's task image is unique to this run: leave no build behind
            store.remove_build(key)
    over = {k: med[k] - med["bare"] for k in ("jail", "image", "podman_exec")}
    print(f"/bin/true median: bare {med['bare']:.2f} ms | host jail {med['jail']:.2f} ms | image {med['image']:.2f} ms"
          f" | podman exec {med['podman_exec']:.2f} ms (load average {os.getloadavg()[0]:.1f})")
    print(json.dumps({
        "benchmark": "task_image_command_overhead", "ours": round(over["image"], 2), "anchor": round(over["podman_exec"], 2),
        "unit": "ms median per-command overhead over bare /bin/true (ours: image under the jail; anchor: podman exec)",
        "ratio": round(over["image"] / over["jail"], 2), "target": "ratio = image / host-jail overhead <= 1.5",
        "host_jail_overhead_ms": round(over["jail"], 2), "build_cold_s": round(cold, 1), "build_warm_s": round(warm, 2),
        "repeats": args.repeats,
    }))


if __name__ == "__main__":
    main()
