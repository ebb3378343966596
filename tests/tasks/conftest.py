"""Fixtures for the tasks tests: a real bubblewrap sandbox and fresh workspaces."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harnessrl.tasks.sandbox import Limits, Sandbox, bwrap_path
from harnessrl.tasks.workspace import Workspace

needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="needs bubblewrap (Debian package `bubblewrap`)")


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    if bwrap_path() is None:
        pytest.skip("needs bubblewrap (Debian package `bubblewrap`)")
    return Sandbox(Limits(timeout_s=20, cpu_s=20))


@pytest.fixture
def ws():
    with Workspace.create(None, quota_mb=64) as w:
        yield w


def uid_processes(uid: int) -> list[int]:
    """Host pids owned by `uid` (a sandbox's leftovers, if any)."""
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


FIXTURES = Path(__file__).parent / "fixtures"

# The fixture task folders hold their own hidden tests; they run inside the sandbox, not here.
collect_ignore_glob = ["fixtures/*"]
