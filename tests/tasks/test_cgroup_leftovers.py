"""The leftover reaper removes the episode cgroups of a run killed with SIGKILL (and kills what is
still running in them), and never touches a live run's. Needs root and a writable cgroup hierarchy;
the skip reason says which is missing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from harnessrl.tasks.cgroup import EpisodeCgroup, cleanup_stale
from harnessrl.tasks.workspace import cleanup_stale as cleanup_workspaces

pytestmark = pytest.mark.sandbox
SRC = str(Path(__file__).parents[2] / "src")

# The owner creates an episode cgroup, starts a process in it (in its own session, so it outlives
# the owner as a kill -9'd eval's sandbox leftovers would), prints the dirs and that pid, and waits.
OWNER = """
import os, subprocess, sys, time
sys.path.insert(0, {src!r})
from harnessrl.tasks.cgroup import EpisodeCgroup
cg = EpisodeCgroup.create({name!r}, 64, 64)
if cg is None:
    print("NONE", EpisodeCgroup.reason(), flush=True); sys.exit(0)
child = subprocess.Popen(["sleep", "300"], start_new_session=True)
for f in cg.procs_files:
    open(f, "w").write(str(child.pid))
print("|".join(str(d) for d in cg.dirs), child.pid, flush=True)
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_a_killed_owners_cgroup_is_reaped_and_a_live_ones_kept():
    if os.geteuid() != 0:
        pytest.skip("episode cgroups need root")
    name = f"test-{uuid.uuid4().hex[:8]}"
    owner = subprocess.Popen([sys.executable, "-c", OWNER.format(src=SRC, name=name)], stdout=subprocess.PIPE, text=True)
    line = owner.stdout.readline().split()
    if not line or line[0] == "NONE":
        owner.kill()
        owner.wait()
        pytest.skip(f"no writable cgroup hierarchy here: {' '.join(line[1:]) or 'the owner printed nothing'}")
    dirs, leftover = [Path(d) for d in line[0].split("|")], int(line[1])
    live = EpisodeCgroup.create(f"live-{name}", 64, 64)  # this process owns it and stays alive
    assert live is not None
    try:
        assert all(d.is_dir() for d in dirs) and _alive(leftover)
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        assert all(d.is_dir() for d in dirs)  # nothing removes them by itself: that is the bug
        assert cleanup_stale() >= 1
        assert not any(d.exists() for d in dirs), dirs
        deadline = time.monotonic() + 5
        while _alive(leftover) and time.monotonic() < deadline:  # killed; its parent (init) reaps it
            time.sleep(0.05)
        assert not _alive(leftover)
        assert all(d.is_dir() for d in live.dirs)  # a live run's cgroup is kept
        cleanup_workspaces(Path("/nonexistent-harnessrl-base"))  # the workspace reaper runs the same sweep
        assert all(d.is_dir() for d in live.dirs)
    finally:
        if _alive(leftover):
            os.kill(leftover, signal.SIGKILL)
        live.remove()
    assert not any(d.exists() for d in live.dirs)
