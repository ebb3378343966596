"""One worker pool for the recipes: jobs in processes that die with the recipe, progress on one queue.

    with folder_lock(out):                                  # one run per output folder
        results = run_pool(train_one, [(cfg, a), (cfg, b)], workers=2, on_message=show, lock_dir=out)

`run_pool` calls `fn(*args, queue)` for every args tuple and returns the results in order. The
job reports progress with `queue.put((key, i, n))`; `on_message(key, i, n)` sees every message,
in this process, whether the jobs run here (`workers <= 1`, or one job) or in spawned workers.

A recipe killed with SIGKILL must not leave workers behind that keep training and writing
into the folder a `--resume` is about to use. So each worker

  * asks the kernel for SIGKILL when its parent dies (Linux `prctl(PR_SET_PDEATHSIG)`), and
    also polls its parent id from a thread (other systems; and the kernel signal follows the
    parent *thread* that spawned it), and
  * holds a shared lock on OUT/.workers.lock for as long as it lives,

and `folder_lock(out)` (the run's exclusive OUT/.run.lock) refuses to start while another run
holds the folder or any worker of an earlier run still holds .workers.lock, after waiting a
few seconds for dying workers to exit. flock locks vanish with their process, so a crash never
leaves a stale lock behind.
"""

from __future__ import annotations

import ctypes
import fcntl
import multiprocessing as mp
import os
import queue as queue_mod
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harnessrl.config import ConfigError

Message = Callable[[str, int, int], None]
RUN_LOCK, WORKERS_LOCK = ".run.lock", ".workers.lock"
PR_SET_PDEATHSIG = 1

_QUEUE: Any = None  # the progress queue of this worker process
_HELD: list[Any] = []  # lock files a worker keeps open for its lifetime


class DirectQueue:
    """The progress queue of jobs run in this process: messages go straight to the callback."""

    def __init__(self, on_message: Message | None):
        self.on_message = on_message

    def put(self, item: tuple[str, int, int]) -> None:
        if self.on_message is not None:
            self.on_message(*item)


def all_runs(progress: Callable[[str, int, int | None], None], label: str, n_runs: int) -> Message:
    """A message callback that shows one bar for all runs: the sum of each run's latest step."""
    seen: dict[str, int] = {}

    def on_message(key: str, i: int, n: int) -> None:
        seen[key] = i
        progress(label, sum(seen.values()), n * n_runs)

    return on_message


def die_with_parent(parent_pid: int) -> None:
    """End this process when `parent_pid` does: a kernel death signal where there is one, and a poll."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="harnessrl-parent-watch", daemon=True).start()


def _init_worker(queue: Any, lock_dir: str | None, parent_pid: int) -> None:
    global _QUEUE
    die_with_parent(parent_pid)
    _QUEUE = queue
    if lock_dir is not None:
        f = open(Path(lock_dir) / WORKERS_LOCK, "a")
        fcntl.flock(f, fcntl.LOCK_SH)  # released by the kernel when this process exits, however it exits
        _HELD.append(f)


def _call(fn: Callable[..., Any], args: tuple) -> Any:
    return fn(*args, _QUEUE)


def _drain(queue: Any, on_message: Message | None, wait_s: float = 0.0) -> None:
    while True:
        try:
            item = queue.get(timeout=wait_s) if wait_s else queue.get_nowait()
        except queue_mod.Empty:
            return
        if on_message is not None:
            on_message(*item)


def run_pool(fn: Callable[..., Any], calls: Sequence[tuple], *, workers: int, on_message: Message | None = None,
             lock_dir: str | Path | None = None) -> list[Any]:
    """fn(*args, queue) for each args in `calls`, on min(workers, len(calls)) spawned processes
    (in this process when that is one); results in the order of `calls`."""
    if workers <= 1 or len(calls) <= 1:
        direct = DirectQueue(on_message)
        return [fn(*args, direct) for args in calls]
    ctx = mp.get_context("spawn")  # no fork: torch and the tokenizers' threads do not survive one
    queue = ctx.Queue()
    init = (queue, None if lock_dir is None else str(lock_dir), os.getpid())
    with ProcessPoolExecutor(min(workers, len(calls)), mp_context=ctx, initializer=_init_worker, initargs=init) as pool:
        futures = [pool.submit(_call, fn, tuple(args)) for args in calls]
        pending = set(futures)
        try:
            while pending:
                _drain(queue, on_message)
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for f in done:
                    f.result()  # a failed job fails the recipe now, not after the others finish
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        _drain(queue, on_message, wait_s=0.05)  # the last messages may still be in the queue's pipe
    return [f.result() for f in futures]


def _try_lock(path: Path, mode: int, wait_s: float) -> Any | None:
    """An open file holding `mode` on `path`, or None if it stayed taken for `wait_s` seconds."""
    f = open(path, "a")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(f, mode | fcntl.LOCK_NB)
            return f
        except BlockingIOError:
            if time.monotonic() >= deadline:
                f.close()
                return None
            time.sleep(0.1)


@contextmanager
def folder_lock(out: str | Path, wait_s: float = 10.0) -> Iterator[None]:
    """Hold OUT for one run: refuse while another run, or a killed run's surviving workers, use it."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    run = _try_lock(out / RUN_LOCK, fcntl.LOCK_EX, wait_s)
    if run is None:
        raise ConfigError(f"{out} is in use by another run (it holds {out / RUN_LOCK}); wait for it to finish "
                          "or choose another --out")
    try:
        stale = _try_lock(out / WORKERS_LOCK, fcntl.LOCK_EX, wait_s)
        if stale is None:
            raise ConfigError(f"workers of an earlier run in {out} are still alive (they hold {out / WORKERS_LOCK}); "
                              "stop them, then resume")
        stale.close()  # nobody else holds it: our own workers take it shared from here on
        yield
    finally:
        run.close()
