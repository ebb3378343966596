"""Where rollouts run: in this process, a local process pool (default; rollout/pool.py, whose
workers die with this process), or Ray actors.

    jobs = [Job(harness_spec, task, seed, index) ...]
    episodes = run_jobs(PolicySpec.parse("oracle"), jobs, backend="local", workers=2, run_id="eval-1")

Jobs travel as data (a `HarnessSpec`, a `Task`, a seed) together with a `PolicySpec`; every
worker builds its own policy and harnesses once and reuses them. Jobs are cut into chunks of
`group_size` that run in lockstep (`run_group`: one batched `policy.act` per turn), and the
chunks are spread over the workers. Results come back in job order whatever the backend, and
an episode depends only on (policy, harness, task, seed, its job's index) — not on the group
size, the worker count or its batch mates — so the same seeds give the same results locally and on Ray. `on_chunk` sees each finished chunk at once (to append it to the
record store: a crash loses at most the chunks in flight).

Ray actors are GPU-aware: an LM policy's actor asks Ray for `gpus_per_worker` GPUs (default: 1
when the cluster has GPUs, else 0), so its model loads on the GPU Ray assigns it
(CUDA_VISIBLE_DEVICES); other policies ask for none unless told.

Ray: the driver starts a local Ray (`num_cpus=workers`, no dashboard, usage stats off) unless
an `address` is given. Ray probes outside addresses when it starts, so a local Ray is refused
unless this process is in a loopback-only network namespace (or HARNESSRL_RAY_ALLOW_NETWORK=1).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessrl.config import ConfigError
from harnessrl.episode import Episode
from harnessrl.harness.base import Harness, HarnessSpec, make_harness
from harnessrl.policies.base import Policy
from harnessrl.policies.registry import PolicySpec, check_policy, make_policy
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.rollout.pool import run_pool
from harnessrl.tasks.contract import TaskLike

BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class Job:
    harness: HarnessSpec
    task: TaskLike
    seed: int
    index: int = 0


class Worker:
    """Runs chunks of jobs; keeps one policy and one harness per spec for its lifetime."""

    def __init__(self, policy: PolicySpec):
        self.policy: Policy = make_policy(policy)
        self.harnesses: dict[str, Harness] = {}

    def harness(self, spec: HarnessSpec) -> Harness:
        key = spec.model_dump_json()
        if key not in self.harnesses:
            self.harnesses[key] = make_harness(spec)
        return self.harnesses[key]

    def run(self, chunk: Sequence[Job], run_id: str) -> list[tuple[int, Episode]]:
        items = [RolloutItem(self.harness(j.harness), j.task, j.seed) for j in chunk]
        reseed = getattr(self.policy, "reseed", None)
        if reseed is not None:  # one run seed: not which worker ran what before, nor which chunk this is
            reseed(0)
        # keyed by job: an LM samples each episode from a stream seeded by its key and seed
        # (policies/sampling.py), so its tokens do not depend on the chunk or group it ran in
        episodes = run_group(self.policy, items, run_id=run_id, keys=[f"job-{j.index}" for j in chunk])
        return [(j.index, e) for j, e in zip(chunk, episodes)]

    def close(self) -> None:
        self.policy.close()


def chunks(jobs: Sequence[Job], group_size: int) -> list[list[Job]]:
    """Consecutive jobs of one (harness, task) stay together, up to group_size per chunk."""
    out: list[list[Job]] = []
    for j in jobs:
        last = out[-1] if out else None
        if last and len(last) < group_size and last[0].harness.id == j.harness.id:
            last.append(j)
        else:
            out.append([j])
    return out


def run_jobs(policy: PolicySpec, jobs: Sequence[Job], *, backend: str = "local", workers: int = 1,
             group_size: int = 1, run_id: str = "", address: str | None = None,
             on_chunk: Callable[[list[Episode]], None] | None = None,
             gpus_per_worker: float | None = None) -> list[Episode]:
    """Run every job to its stop rule; returns Episodes in job order."""
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if gpus_per_worker is not None and (gpus_per_worker < 0 or (gpus_per_worker > 0 and backend != "ray")):
        raise ConfigError(f"gpus_per_worker={gpus_per_worker}: GPUs are requested per Ray actor; use backend=ray "
                          "and a value >= 0 (local workers use the devices the policy config names)")
    if workers < 1 or group_size < 1:
        raise ConfigError(f"workers ({workers}) and group_size ({group_size}) must be at least 1")
    check_policy(policy)
    jobs = [Job(j.harness, j.task, j.seed, i) for i, j in enumerate(jobs)]
    parts = chunks(jobs, group_size)
    results: dict[int, Episode] = {}

    def collect(done: list[tuple[int, Episode]]) -> None:
        results.update(done)
        if on_chunk is not None:
            on_chunk([e for _, e in done])

    if backend == "ray":
        _run_ray(policy, parts, workers, run_id, address, collect, gpus_per_worker)
    elif workers == 1 or len(parts) == 1:
        worker = Worker(policy)
        try:
            for part in parts:
                collect(worker.run(part, run_id))
        finally:
            worker.close()
    else:
        _run_pool(policy, parts, workers, run_id, collect)
    return [results[j.index] for j in jobs]


# ----------------------------------------------------------------------------------------
# Local process pool (rollout/pool.py: workers that die with this process)

_WORKER: Worker | None = None
_INIT_ERROR: BaseException | None = None


def _pool_init(policy: PolicySpec) -> None:
    global _WORKER, _INIT_ERROR
    try:  # a worker is one core: never let torch spread over the others
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    try:
        _WORKER = Worker(policy)
    except Exception as err:  # re-raised by the first job, so the driver sees the real error
        _INIT_ERROR = err


def _pool_run(chunk: list[Job], run_id: str, queue: Any = None) -> list[tuple[int, Episode]]:
    """One chunk in this worker. `queue` is the pool's progress queue (rollout/pool.py passes it
    to every call); episodes report no progress of their own, and a Ray actor has none."""
    if _INIT_ERROR is not None:
        raise _INIT_ERROR
    assert _WORKER is not None
    return _WORKER.run(chunk, run_id)


def _run_pool(policy: PolicySpec, parts: list[list[Job]], workers: int, run_id: str, collect) -> None:
    run_pool(_pool_run, [(part, run_id) for part in parts], workers=workers, on_result=lambda _, done: collect(done),
             setup=_pool_init, setup_args=(policy,))


# ----------------------------------------------------------------------------------------
# Ray actors


def loopback_only() -> bool:
    """True when this process's network namespace has no interface but loopback.

    Read from /proc/self/net/dev, which follows the process's namespace (/sys/class/net shows
    the namespace sysfs was mounted in)."""
    try:
        lines = Path("/proc/self/net/dev").read_text().splitlines()[2:]
    except OSError:
        return False
    return {ln.split(":", 1)[0].strip() for ln in lines if ":" in ln} <= {"lo"}


def worker_gpus(policy: PolicySpec, requested: float | None, cluster_gpus: float) -> float:
    """GPUs one Ray actor asks for: the request, else 1 for an LM policy on a cluster with GPUs, else 0."""
    if requested is not None:
        if requested > cluster_gpus:
            raise ConfigError(f"gpus_per_worker={requested} but the Ray cluster has {cluster_gpus:g} GPU(s); "
                              "lower it or add GPU nodes")
        return float(requested)
    return 1.0 if policy.name == "lm" and cluster_gpus >= 1 else 0.0


def _run_ray(policy: PolicySpec, parts: list[list[Job]], workers: int, run_id: str, address: str | None, collect,
             gpus_per_worker: float | None = None) -> None:
    try:
        import ray
    except ImportError:
        raise ConfigError("--backend ray needs Ray: pip install 'harnessrl[ray]'") from None
    started = False
    if not ray.is_initialized():
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if address is None:
            if not loopback_only() and os.environ.get("HARNESSRL_RAY_ALLOW_NETWORK") != "1":
                raise ConfigError(
                    "a local Ray probes outside network addresses when it starts; run it inside a loopback-only "
                    "network namespace (e.g. `unshare -n sh -c 'ip link set lo up && harnessrl ...'`), give "
                    "--ray-address of an existing cluster, or set HARNESSRL_RAY_ALLOW_NETWORK=1 to accept that"
                )
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                     configure_logging=False, runtime_env={"env_vars": {"RAY_USAGE_STATS_ENABLED": "0"}})
        else:
            ray.init(address=address, log_to_driver=False)
        started = True
    try:
        cluster_gpus = float(ray.cluster_resources().get("GPU", 0))
        gpus = worker_gpus(policy, gpus_per_worker, cluster_gpus)
        # an actor Ray cannot place would hold its chunk forever: no more actors than GPUs allow
        n = min(workers, len(parts), int(cluster_gpus // gpus) if gpus else workers)
        actor_cls = ray.remote(num_cpus=1, num_gpus=gpus)(_RayWorker)
        actors = [actor_cls.remote(policy) for _ in range(n)]
        queue = list(parts)
        running: dict[Any, Any] = {}
        for actor in actors:  # one chunk per idle actor; refill as chunks finish
            if queue:
                running[actor.run.remote(queue.pop(0), run_id)] = actor
        while running:
            done, _ = ray.wait(list(running), num_returns=1)
            ref = done[0]
            actor = running.pop(ref)
            collect(ray.get(ref))
            if queue:
                running[actor.run.remote(queue.pop(0), run_id)] = actor
        for actor in actors:
            ray.get(actor.close.remote())
    finally:
        if started:
            ray.shutdown()


class _RayWorker:
    def __init__(self, policy: PolicySpec):
        _pool_init(policy)

    def run(self, chunk: list[Job], run_id: str) -> list[tuple[int, Episode]]:
        return _pool_run(chunk, run_id)

    def close(self) -> None:
        if _WORKER is not None:
            _WORKER.close()
