"""Shared fixtures: one browser per test module where tests only read pages; own browsers where
a test checks start-up or teardown. Every browser is real headless Chromium."""

from __future__ import annotations

import psutil
import pytest

from harnessrl.envs.miniwob import BrowserPool, MiniWoBEnv

BROWSER_NAMES = ("chromium", "chromedriver", "chrome", "chrome_crashpad_handler")


def browser_children() -> set[int]:
    """Live (non-zombie) Chromium/chromedriver processes below this test process."""
    out = set()
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.name() in BROWSER_NAMES:
                out.add(proc.pid)
        except psutil.NoSuchProcess:
            pass
    return out


def alive(pids) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.fixture(scope="module")
def env():
    with MiniWoBEnv("click-test-2") as env:
        yield env


@pytest.fixture(scope="module")
def pool():
    with BrowserPool(2) as pool:
        yield pool
