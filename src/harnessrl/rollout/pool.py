"""The one process pool: rollout workers (rollout/backends.py) and recipe runs (recipes/workers.py)
run their jobs here, in spawned processes that die with the process that started them.

    results = run_pool(fn, [(a,), (b,)], workers=2, on_message=show, on_result=keep, lock_dir=out)

`run_pool` calls `fn(*args, queue)` for every args tuple and returns the results in the order of
`calls`; `on_result(i, result)` sees each result as soon as its job ends (to store it before the
others finish). A job reports progress with `queue.put((key, i, n))`, and `on_message(key, i, n)`
sees every message in this process, whether the jobs run here (`workers <= 1`, or one job) or in
workers. `setup(*setup_args)` runs once in each worker before its first job (to build what all its
jobs share: a policy, harnesses).

A parent killed with SIGKILL must not leave workers behind that keep running (training, writing
into a folder a `--resume` is about to use, holding a GPU). So each worker

  * asks the kernel for SIGKILL when its parent dies (Linux `prctl(PR_SET_PDEATHSIG)`), and
    also polls its parent id from a thread (other systems; and the kernel signal follows the
    parent *thread* that spawned it), and
  * with `lock_dir`, holds a shared lock on LOCK_DIR/.workers.lock for as long as it lives, so the
    next run can tell that workers of a killed one are still alive (recipes.workers.folder_lock).
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
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

Message = Callable[[str, int, int], None]
WORKERS_LOCK = ".workers.lock"
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


def _init_worker(queue: Any, lock_dir: str | None, parent_pid: int, setup: Callable[..., None] | None,
                 setup_args: tuple) -> None:
    global _QUEUE
    die_with_parent(parent_pid)
    _QUEUE = queue
    if lock_dir is not None:
        f = open(Path(lock_dir) / WORKERS_LOCK, "a")
        fcntl.flock(f, fcntl.LOCK_SH)  # released by the kernel when this process exits, however it exits
        _HELD.append(f)
    if setup is not None:
        setup(*setup_args)


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
             on_result: Callable[[int, Any], None] | None = None, lock_dir: str | Path | None = None,
             setup: Callable[..., None] | None = None, setup_args: tuple = ()) -> list[Any]:
    """fn(*args, queue) for each args in `calls`, on min(workers, len(calls)) spawned processes
    (in this process when that is one); results in the order of `calls`."""
    if workers <= 1 or len(calls) <= 1:
        direct = DirectQueue(on_message)
        if setup is not None:
            setup(*setup_args)
        results = []
        for i, args in enumerate(calls):
            results.append(fn(*args, direct))
            if on_result is not None:
                on_result(i, results[-1])
        return results
    ctx = mp.get_context("spawn")  # no fork: torch and the tokenizers' threads do not survive one
    queue = ctx.Queue()
    init = (queue, None if lock_dir is None else str(lock_dir), os.getpid(), setup, tuple(setup_args))
    with ProcessPoolExecutor(min(workers, len(calls)), mp_context=ctx, initializer=_init_worker, initargs=init) as pool:
        futures = [pool.submit(_call, fn, tuple(args)) for args in calls]
        index = {f: i for i, f in enumerate(futures)}
        pending = set(futures)
        try:
            while pending:
                _drain(queue, on_message)
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for f in sorted(done, key=index.__getitem__):
                    result = f.result()  # a failed job fails the caller now, not after the others finish
                    if on_result is not None:
                        on_result(index[f], result)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        _drain(queue, on_message, wait_s=0.05)  # the last messages may still be in the queue's pipe
    return [f.result() for f in futures]
