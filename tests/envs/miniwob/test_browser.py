"""Browser start-up and teardown: the flags reach Chromium, and nothing survives close() —
after a normal close, an exception, a real SIGINT, a failed start, or an exit without close()."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from harnessrl.envs.miniwob import EXTRA_CHROMIUM_FLAGS, BrowserError, Click, MiniWoBEnv
from harnessrl.envs.miniwob.browser import MINIWOB_HEADLESS_FLAGS, reap_orphans, tagged_processes

from .conftest import alive, browser_children

pytestmark = pytest.mark.browser


def _browser_cmdline(env: MiniWoBEnv) -> list[str]:
    for pid in env.pids:
        proc = psutil.Process(pid)
        cmd = proc.cmdline()
        if proc.name() == "chromium" and not any(a.startswith("--type=") for a in cmd):
            return cmd
    raise AssertionError("no Chromium browser process under chromedriver")


def test_chromium_runs_with_miniwob_and_harnessrl_flags():
    before = browser_children()
    with MiniWoBEnv("click-test") as env:
        cmd = _browser_cmdline(env)
        for flag in (*MINIWOB_HEADLESS_FLAGS, *EXTRA_CHROMIUM_FLAGS):
            assert flag in cmd, f"{flag} missing from {cmd}"
        assert env.reset(0).utterance == "Click the button."
    assert browser_children() - before == set()


def cmdline(pid: int) -> list[str]:
    """A process's arguments; none once it has exited (a short-lived helper may go at any time)."""
    try:
        return psutil.Process(pid).cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return []


def test_close_kills_every_process_and_removes_the_profile():
    before = browser_children()
    env = MiniWoBEnv("click-test")
    pids = env.pids
    assert len(pids) >= 3  # chromedriver, the browser, its helpers
    profiles = {a.split("=", 1)[1] for p in pids for a in cmdline(p) if a.startswith("--user-data-dir=")}
    tmpdir = env.instance.tmpdir
    assert profiles and all(p.startswith(tmpdir) for p in profiles)
    tagged = [p.pid for p, _ in tagged_processes(tmpdir)]
    outside = set(tagged) - set(pids)  # Chromium's crash handlers leave the tree (ppid 1, own session)
    assert outside, "expected Chromium's double-forked crash handlers"
    env.close()
    env.close()  # twice is fine
    assert alive(pids) == [] and alive(tagged) == []
    assert browser_children() - before == set()
    assert not Path(tmpdir).exists()


def test_exception_inside_with_leaves_nothing():
    before = browser_children()
    with pytest.raises(ValueError, match="boom"):
        with MiniWoBEnv("click-test") as env:
            pids = env.pids
            env.reset(0)
            raise ValueError("boom")
    assert alive(pids) == []
    assert browser_children() - before == set()


def test_real_sigint_mid_episode_leaves_nothing():
    before = browser_children()
    pids: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        with MiniWoBEnv("click-test-2") as env:
            pids = env.pids
            timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
            timer.start()
            try:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:  # SIGINT lands somewhere inside Selenium/miniwob
                    page = env.reset(1)
                    env.step(Click(page.elements[-1].ref))
            finally:
                timer.cancel()
    assert pids and alive(pids) == []
    assert browser_children() - before == set()


def test_failed_start_leaks_nothing(monkeypatch, tmp_path):
    before = browser_children()
    monkeypatch.setenv("MINIWOB_CHROME_BINARY", "/bin/false")  # executable, but no browser
    with pytest.raises(BrowserError, match="Chromium did not start"):
        MiniWoBEnv("click-test")
    assert browser_children() - before == set()
    monkeypatch.setenv("MINIWOB_CHROME_BINARY", str(tmp_path / "nope"))
    with pytest.raises(BrowserError, match="MINIWOB_CHROME_BINARY=.*chromium"):
        MiniWoBEnv("click-test")


CHILD = textwrap.dedent(
    """
    import json, os, signal, sys, threading
    from harnessrl.envs.miniwob import MiniWoBEnv, Click
    mode = sys.argv[1]
    env = MiniWoBEnv("click-test-2")
    print(json.dumps(env.pids), flush=True)
    if mode == "forget":            # never calls close(): the atexit hook must
        env.reset(0)
        sys.exit(0)
    if mode == "crash":             # an uncaught exception without close()
        env.reset(0)
        raise RuntimeError("crash")
    if mode == "hang":              # waits to be SIGKILLed
        env.reset(0)
        threading.Event().wait()
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    while True:                     # "sigint": Ctrl-C mid-episode, nothing handles it
        page = env.reset(1)
        env.step(Click(page.elements[-1].ref))
    """
)


@pytest.mark.parametrize("mode", ["forget", "crash", "sigint"])
def test_process_exit_without_close_leaves_nothing(mode):
    child = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, timeout=120)
    assert child.returncode != 0 or mode == "forget", child.stderr
    pids = json.loads(child.stdout.splitlines()[0])
    assert len(pids) >= 3
    time.sleep(0.2)
    survivors = []
    for pid in alive(pids):  # a reused pid would not be a browser
        try:
            if psutil.Process(pid).name() in ("chromium", "chromedriver"):
                survivors.append(pid)
        except psutil.NoSuchProcess:
            pass
    assert survivors == [], f"{mode}: {survivors} survived; stderr: {child.stderr[-2000:]}"


def test_a_sigkilled_owner_is_reaped_by_the_next_browser_start():
    child = subprocess.Popen([sys.executable, "-c", CHILD, "hang"], stdout=subprocess.PIPE, text=True)
    try:
        pids = json.loads(child.stdout.readline())
        child.kill()  # no handler, no atexit: the browser is orphaned
        child.wait(10)
        tags = {tag for p, tag in tagged_processes() if p.pid in pids}
        assert tags and alive(pids)
        reap_orphans()  # (another test process starting a browser may have reaped them first)
        assert alive(pids) == [] and not any(Path(t).exists() for t in tags)
    finally:
        if child.poll() is None:
            child.kill()


WORKER = textwrap.dedent(
    """
    import json, multiprocessing as mp, os, sys
    from concurrent.futures import ProcessPoolExecutor

    # Imported at the top: the forkserver preloads __main__, so workers inherit the module.
    from harnessrl.envs.miniwob import open_env, shared_pool

    def job(seed):
        env = open_env("miniwob/click-test", seed)  # a pooled browser the worker never closes
        env.reset(seed)
        env.close()  # back to the shared pool, still running
        return os.getpid(), shared_pool().pids

    if __name__ == "__main__":
        with ProcessPoolExecutor(1, mp_context=mp.get_context("forkserver")) as ex:
            print(json.dumps(ex.submit(job, 0).result()), flush=True)
    """
)


def test_multiprocessing_workers_close_their_browsers_on_exit(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    worker, pids = json.loads(run.stdout.splitlines()[-1])
    assert len(pids) >= 3
    time.sleep(0.2)
    assert alive(pids) == []
    assert not any(f"{worker}-" in tag for _, tag in tagged_processes())
