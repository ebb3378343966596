"""Recipe runs in parallel: the one process pool (rollout.pool), progress on one bar, a folder lock.

    with folder_lock(out):                                  # one run per output folder
        results = run_pool(train_one, [(cfg, a), (cfg, b)], workers=2, on_message=show, lock_dir=out)

`run_pool` (rollout/pool.py) runs each job in a spawned worker that dies with the recipe and holds
a shared lock on OUT/.workers.lock for as long as it lives. `folder_lock(out)` (the run's
exclusive OUT/.run.lock) refuses to start while another run holds the folder or any worker of an
earlier run still holds .workers.lock, after waiting a few seconds for dying workers to exit.
flock locks vanish with their process, so a crash never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harnessrl.config import ConfigError
from harnessrl.rollout.pool import WORKERS_LOCK, DirectQueue, Message, run_pool

__all__ = ["RUN_LOCK", "WORKERS_LOCK", "DirectQueue", "all_runs", "folder_lock", "run_pool"]

RUN_LOCK = ".run.lock"


def all_runs(progress: Callable[[str, int, int | None], None], label: str, n_runs: int) -> Message:
    """A message callback that shows one bar for all runs: the sum of each run's latest step."""
    seen: dict[str, int] = {}

    def on_message(key: str, i: int, n: int) -> None:
        seen[key] = i
        progress(label, sum(seen.values()), n * n_runs)

    return on_message


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
