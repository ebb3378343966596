"""BrowserPool: parallel browsers, ordered results, blocking and overflow, shared-pool loans, teardown."""

from __future__ import annotations

import threading
import time

import pytest

from harnessrl.envs.miniwob import BrowserPool, MiniWoBTask, close_shared_pool, open_env, shared_pool
from harnessrl.envs.miniwob.browser import tagged_processes

from .conftest import alive, browser_children

pytestmark = pytest.mark.browser


def test_map_uses_several_browsers_and_keeps_order():
    before = browser_children()
    seen: dict[int, set] = {}

    def job(env, seed):
        seen.setdefault(threading.get_ident(), set()).add(env.pids[0])
        page = env.reset(seed)
        time.sleep(0.2)  # overlap the two workers
        return seed, env.task, page.utterance

    with BrowserPool(2) as pool:
        out = pool.map(job, [("click-test", s) if s % 2 else ("click-button", s) for s in range(6)])
        pids = pool.pids
        assert len({pid for s in seen.values() for pid in s}) == 2  # two chromedrivers did the work
    assert [s for s, _, _ in out] == list(range(6))
    assert all(task == ("click-test" if s % 2 else "click-button") for s, task, _ in out)
    assert alive(pids) == [] and browser_children() - before == set()


def test_an_error_in_a_job_propagates_and_the_pool_cleans_up():
    before = browser_children()

    def job(env, seed):
        env.reset(seed)
        if seed == 1:
            raise RuntimeError("job failed")
        return seed

    pool = BrowserPool(2)
    with pytest.raises(RuntimeError, match="job failed"):
        pool.map(job, [("click-test", s) for s in range(4)])
    assert browser_children() - before == set()
    with pytest.raises(Exception, match="closed"):
        pool.acquire("click-test")


def test_acquire_waits_at_size_unless_overflow():
    with BrowserPool(1) as pool:
        env = pool.acquire("click-test")
        got = []
        waiter = threading.Thread(target=lambda: got.append(pool.acquire("enter-text")))
        waiter.start()
        time.sleep(0.5)
        assert got == []  # blocked: the one browser is out
        pool.release(env)
        waiter.join(10)
        assert got and got[0] is env and env.task == "enter-text"  # same browser, switched task
        pool.release(got[0])
    with BrowserPool(1, overflow=True) as pool:
        a, b = pool.acquire("click-test"), pool.acquire("click-test")
        assert a is not b
        pool.release(a)
        pool.release(b)  # only `size` idle browsers are kept: b is closed
        assert alive(b.pids) == [] and len(pool.pids) == len(a.pids)


def test_open_env_lends_from_the_shared_pool():
    before = browser_children()
    try:
        env = open_env(MiniWoBTask("click-test"), seed=0)
        pids = env.pids
        assert env.reset(0).utterance == "Click the button."
        env.close()
        with pytest.raises(Exception, match="closed"):
            env.reset(0)
        again = open_env("miniwob/enter-text", seed=1)
        assert again.pids == pids and again.task == "enter-text"  # the same browser, lent again
        again.close()
        assert shared_pool().pids == pids
    finally:
        close_shared_pool()
    assert alive(pids) == [] and browser_children() - before == set()


def test_a_dead_browser_is_not_lent_again():
    with BrowserPool(1) as pool:
        env = pool.acquire("click-test")
        tmpdir = env.instance.tmpdir
        env.instance._service.process.kill()  # chromedriver dies under the env
        env.instance._service.process.wait()
        pool.release(env)
        fresh = pool.acquire("click-test")
        assert fresh is not env and fresh.alive and fresh.reset(0).utterance == "Click the button."
        pool.release(fresh)
    assert not env.alive and tagged_processes(tmpdir) == []  # its orphaned Chromium was killed too
