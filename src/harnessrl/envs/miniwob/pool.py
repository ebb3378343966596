"""`BrowserPool`: a fixed number of MiniWoB browsers shared by worker threads.

Browser start-up costs ~1 s and switching a browser to another task ~0.1 s, so the pool
starts browsers lazily (up to `size`), hands out an idle one (preferring one already on the
requested task), and keeps it for the next job. Selenium calls wait on chromedriver's HTTP
socket and release the GIL, so threads give real parallelism across browsers.

`close()` closes every browser; it also runs on `with` exit after an exception or a
KeyboardInterrupt, and anything still open at interpreter exit is closed by browser.close_all.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import TypeVar

from selenium.common.exceptions import WebDriverException

from harnessrl.envs.miniwob.browser import BrowserError
from harnessrl.envs.miniwob.env import MiniWoBEnv, check_task

J = TypeVar("J")
R = TypeVar("R")


class BrowserPool:
    """`size` browsers at most; with `overflow=True` a checkout never waits (an extra browser
    starts when all are busy) and only `size` idle browsers are kept. The rollout loop opens
    every env of a group before stepping any, so its shared pool must overflow, not wait."""

    def __init__(self, size: int = 2, *, screenshots: bool = False, overflow: bool = False) -> None:
        if size < 1:
            raise ValueError(f"BrowserPool size must be >= 1, got {size}")
        self.size = size
        self.overflow = overflow
        self._screenshots = screenshots
        self._idle: list[MiniWoBEnv] = []
        self._all: list[MiniWoBEnv] = []
        self._starting = 0
        self._closed = False
        self._cond = threading.Condition()

    # ------------------------------------------------------------------ checkout
    def acquire(self, task: str) -> MiniWoBEnv:
        """An env on `task`, from the idle ones or a new browser; blocks while all `size` are busy."""
        check_task(task)
        with self._cond:
            while True:
                if self._closed:
                    raise BrowserError("the BrowserPool is closed")
                if self._idle:
                    env = next((e for e in self._idle if e.task == task), self._idle[0])
                    self._idle.remove(env)
                    break
                if self.overflow or len(self._all) + self._starting < self.size:
                    self._starting += 1
                    env = None
                    break
                self._cond.wait()
        if env is None:
            try:
                env = MiniWoBEnv(task, screenshots=self._screenshots)
            finally:
                with self._cond:
                    self._starting -= 1
                    if env is not None:
                        self._all.append(env)
                    self._cond.notify_all()
            if self._closed:  # closed while this browser was starting
                env.close()
                raise BrowserError("the BrowserPool is closed")
        try:
            env.set_task(task)
        except BaseException:
            self.release(env, broken=True)
            raise
        return env

    def release(self, env: MiniWoBEnv, broken: bool = False) -> None:
        """Return an env; a `broken` one (its browser failed or died) is closed and replaced on demand."""
        broken = broken or not env.alive
        with self._cond:
            discard = broken or self._closed or len(self._idle) >= self.size
            if discard:
                if env in self._all:
                    self._all.remove(env)
            else:
                self._idle.append(env)
            self._cond.notify_all()
        if discard:
            env.close()

    @contextmanager
    def env(self, task: str) -> Iterator[MiniWoBEnv]:
        env = self.acquire(task)
        broken = False
        try:
            yield env
        except (WebDriverException, BrowserError):
            broken = True
            raise
        finally:
            self.release(env, broken=broken)

    # ------------------------------------------------------------------ parallel jobs
    def map(self, fn: Callable[[MiniWoBEnv, J], R], jobs: Iterable[tuple[str, J]]) -> list[R]:
        """Run fn(env, job) for each (task, job) on up to `size` browsers at once; results in job order."""
        jobs = list(jobs)

        def run(task: str, job: J) -> R:
            with self.env(task) as env:
                return fn(env, job)

        with ThreadPoolExecutor(max_workers=min(self.size, max(1, len(jobs))), thread_name_prefix="miniwob") as pool:
            futures = [pool.submit(run, task, job) for task, job in jobs]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                self.close()  # unblocks workers stuck in a browser call
                wait(futures)
                raise

    # ------------------------------------------------------------------ teardown
    @property
    def pids(self) -> list[int]:
        with self._cond:
            envs = list(self._all)
        return [pid for env in envs for pid in env.pids]

    def close(self) -> None:
        with self._cond:
            self._closed = True
            envs, self._all, self._idle = list(self._all), [], []
            self._cond.notify_all()
        for env in envs:
            env.close()

    def __enter__(self) -> BrowserPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ----------------------------------------------------------------------------------------
# The process-wide pool behind the rollout loop's env opener


class PooledEnv:
    """A `MiniWoBEnv` on loan from a pool: same API; `close()` hands the browser back."""

    def __init__(self, pool: BrowserPool, env: MiniWoBEnv) -> None:
        self._pool, self._env = pool, env

    def __getattr__(self, name: str):
        env = self.__dict__.get("_env")
        if env is None:
            raise BrowserError("this MiniWoB env was closed (returned to its pool)")
        return getattr(env, name)

    def close(self) -> None:
        env, self._env = self.__dict__.get("_env"), None
        if env is not None:
            self._pool.release(env)


_SHARED: BrowserPool | None = None
_SHARED_LOCK = threading.Lock()


def pool_size() -> int:
    """Browsers the shared pool keeps (HARNESSRL_MINIWOB_BROWSERS, default 4); the rollout loop
    opens at most this many MiniWoB envs at once (rollout.envs.max_open)."""
    raw = os.environ.get("HARNESSRL_MINIWOB_BROWSERS", "4")
    try:
        size = int(raw)
    except ValueError:
        size = 0
    if size < 1:
        raise ValueError(f"HARNESSRL_MINIWOB_BROWSERS={raw!r}: set a whole number of browsers >= 1, e.g. 4")
    return size


def shared_pool() -> BrowserPool:
    """The pool `open_env` draws from; pool_size() idle browsers are kept."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or _SHARED._closed:
            _SHARED = BrowserPool(pool_size(), overflow=True)
        return _SHARED


def close_shared_pool() -> None:
    """Close every browser of the shared pool (also runs at interpreter exit)."""
    with _SHARED_LOCK:
        pool = _SHARED
    if pool is not None:
        pool.close()


atexit.register(close_shared_pool)
