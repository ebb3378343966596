"""Issue 15, sandbox side: the syscall filter, whole-episode limits, capped tmpfs, deep trees.

Every check runs the attack inside the real sandbox; where a check depends on what the machine
offers (root, cgroups, x86_64 syscall numbers) it says so in its skip reason.
"""

from __future__ import annotations

import os
import platform
import textwrap
import time
from dataclasses import replace

import pytest

from harnessrl.tasks.cgroup import EpisodeCgroup
from harnessrl.tasks.grader import copy_tree, live_processes
from harnessrl.tasks.sandbox import Limits, Sandbox
from harnessrl.tasks.seccomp import filter_bpf
from harnessrl.tasks.workspace import Workspace

from .conftest import uid_processes

pytestmark = pytest.mark.sandbox
x86_64 = pytest.mark.skipif(platform.machine() != "x86_64", reason="syscall numbers below are x86_64's")
needs_filter = pytest.mark.skipif(filter_bpf() is None, reason="needs libseccomp's Python bindings (python3-seccomp)")

# Each probe calls the raw syscall with harmless arguments and prints NAME=errno-name (or OK).
PROBE = textwrap.dedent("""\
    import ctypes, errno, os, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    def call(name, nr, *args):
        ctypes.set_errno(0)
        r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
        print(f"{name}=" + ("OK" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")))
    child = os.fork()
    if child == 0:
        time.sleep(5)
        os._exit(0)
    buf = ctypes.create_string_buffer(64)
    iov = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 64)
    pidfd = libc.syscall(434, child, 0)                                  # pidfd_open (allowed)
    call("ptrace", 101, 16, child, 0, 0)                                  # PTRACE_ATTACH to our own child
    call("pidfd_getfd", 438, pidfd, 1, 0)
    call("process_vm_readv", 310, child, ctypes.addressof(iov), 1, ctypes.addressof(iov), 1, 0)
    call("process_vm_writev", 311, child, ctypes.addressof(iov), 1, ctypes.addressof(iov), 1, 0)
    params = ctypes.create_string_buffer(120)
    call("io_uring_setup", 425, 4, ctypes.addressof(params))
    call("io_uring_enter", 426, 0, 0, 0, 0, 0, 0)
    call("io_uring_register", 427, 0, 0, 0, 0)
    call("keyctl", 250, 0, -3, 0, 0)                                      # KEYCTL_GET_KEYRING_ID, session
    call("add_key", 248, ctypes.addressof(ctypes.create_string_buffer(b"user")),
         ctypes.addressof(ctypes.create_string_buffer(b"k")), 0, 0, -3)
    call("request_key", 249, 0, 0, 0, 0)
    call("bpf", 321, 0, 0, 0)
    call("perf_event_open", 298, 0, 0, -1, -1, 0)
    call("kexec_load", 246, 0, 0, 0, 0)
    call("kexec_file_load", 320, -1, -1, 0, 0, 0)
    call("userfaultfd", 323, 0)
    call("unshare_user", 272, 0x10000000)                                 # CLONE_NEWUSER
    call("unshare_net", 272, 0x40000000)
    call("clone_newuser", 56, 0x10000000 | 17, 0, 0, 0, 0)                # SIGCHLD | CLONE_NEWUSER
    call("clone3", 435, 0, 0)
    call("setns", 308, pidfd, 0)
    call("mount", 165, 0, 0, 0, 0, 0)
    call("umount2", 166, 0, 0)
    call("fsopen", 430, 0, 0)
    call("open_tree", 428, -100, 0, 0)
    call("pivot_root", 155, 0, 0)
    call("kcmp", 312, os.getpid(), child, 0, 0, 0)
    call("ioctl_tiocsti", 16, 0, 0x5412, ctypes.addressof(ctypes.create_string_buffer(b"x")))
    os.kill(child, 9)
    """)
BLOCKED = ["ptrace", "pidfd_getfd", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter",
           "io_uring_register", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "kexec_load",
           "kexec_file_load", "userfaultfd", "unshare_user", "unshare_net", "clone_newuser", "setns", "mount",
           "umount2", "fsopen", "open_tree", "pivot_root", "kcmp", "ioctl_tiocsti"]


def probe(sandbox: Sandbox, ws: Workspace) -> dict[str, str]:
    r = sandbox.run(["python", "-c", PROBE], ws)
    assert r.status == "ok", r.output
    return dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)


@x86_64
@needs_filter
def test_every_blocked_syscall_is_refused_inside_the_sandbox(sandbox, ws):
    got = probe(sandbox, ws)
    assert {name: got.get(name) for name in BLOCKED} == {name: "EPERM" for name in BLOCKED}
    assert got["clone3"] == "ENOSYS"  # so libc falls back to clone(), whose flags the filter sees
    r = sandbox.run("grep ^Seccomp: /proc/self/status; python -c 'import subprocess; print(subprocess.run([\"true\"]).returncode)'", ws)
    assert r.stdout.split() == ["Seccomp:", "2", "0"]  # filtered, and ordinary fork/exec still work


@x86_64
@needs_filter
def test_without_the_filter_the_same_probe_gets_through(sandbox, ws):
    # The control: the filter, not the missing capabilities, is what refuses these calls.
    got = probe(Sandbox(sandbox.limits, seccomp=False), ws)
    assert got["ptrace"] == "OK" and got["pidfd_getfd"] == "OK" and got["process_vm_readv"] == "OK"


@x86_64
@needs_filter
def test_agent_processes_cannot_reach_each_other(sandbox, ws):
    # A long-lived agent process (a tmux-like server) and a second command of the same episode.
    script = textwrap.dedent("""\
        import ctypes, errno, os, sys
        libc = ctypes.CDLL(None, use_errno=True)
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
        print("visible", len(pids))
        for pid in pids:
            fd = libc.syscall(434, pid, 0)
            print("getfd", libc.syscall(438, fd, 0, 0), errno.errorcode.get(ctypes.get_errno()))
        """)
    with sandbox.spawn(["sleep", "30"], ws) as other:
        r = sandbox.run(["python", "-c", script], ws)
        assert other.alive
    assert r.stdout.splitlines()[0] == "visible 0"  # each call has its own pid namespace
    r = sandbox.run(["python", "-c", "import os, time\nif os.fork() == 0: time.sleep(3); os._exit(0)\n" + script], ws)
    assert "visible 1" in r.stdout and "getfd -1 EPERM" in r.stdout  # a sibling in the same call: refused


def _cgroup_limited(sandbox: Sandbox, ws: Workspace) -> bool:
    cg = sandbox.cgroup(ws)
    return cg is not None and cg.limited


def test_memory_of_all_processes_together_is_bounded():
    # Four processes of 200 MB each: each is far below the 1 GB per-process limit, together they
    # exceed the 512 MB episode limit. Before issue 15 they held 800+ MB.
    # What may be asserted: the kernel's OOM killer ends the *largest* process, usually one that
    # already printed `held`, so all four can print it (CI under load staggers them that way). But
    # no more than two can hold 200 MB through the whole sleep and print `done`: 3 x 200 > 512.
    sandbox = Sandbox(Limits(timeout_s=60, cpu_s=60, memory_mb=1024, episode_memory_mb=512))
    hog = ("import time, sys\nb = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
           "print('held', flush=True)\ntime.sleep(6)\nprint('done', flush=True)\n")
    with Workspace.create(None, quota_mb=16) as ws:
        if not _cgroup_limited(sandbox, ws):
            pytest.skip(f"this machine gives no per-episode cgroup: {EpisodeCgroup.reason()} (docs/security.md)")
        r = sandbox.run("for i in 1 2 3 4; do python -c \"$HOG\" & done; wait", ws, env={"HOG": hog})
        cg = sandbox.cgroup(ws)
        peak = max(_read_int(d / "memory.max_usage_in_bytes") or _read_int(d / "memory.peak") or 0 for d in cg.dirs)
    assert r.status == "oom" and "episode memory limit" in r.detail, (r.status, r.detail, r.stdout)
    assert r.stdout.count("done") <= 2, r.stdout
    assert 0 < peak <= 512 << 20


def _read_int(path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def test_tmp_inodes_and_size_are_capped_for_the_whole_episode(sandbox):
    if os.geteuid() != 0:
        pytest.skip("without root /tmp is a bwrap tmpfs: size-capped, no inode cap (bwrap has no option)")
    with Workspace.create(None, quota_mb=16, max_files=500, scratch_mb=16, scratch_inodes=500) as ws:
        # what a fresh call's /tmp holds (empty, or the mount point of a checkout that lives under /tmp)
        baseline = sandbox.run("ls -A /tmp", ws).stdout.split()
        r = sandbox.run("cd /tmp && for i in $(seq 2000); do : > f$i || { echo tmp-stopped-at $i; break; }; done; "
                        "cd /dev/shm && for i in $(seq 2000); do : > f$i || { echo shm-stopped-at $i; break; }; done; "
                        "cd /app && for i in $(seq 2000); do : > f$i || { echo app-stopped-at $i; break; }; done", ws)
        assert r.status == "ok", r.output
        stops = dict(line.split("-stopped-at ") for line in r.stdout.split("\n") if "-stopped-at" in line)
        assert set(stops) == {"tmp", "shm", "app"}, r.stdout
        assert int(stops["tmp"]) + int(stops["shm"]) < 600 and int(stops["app"]) <= 500
        assert r.stderr.count("No space left") >= 3
        after = sandbox.run("ls -A /tmp; : > /tmp/x && echo fresh", ws)  # the next call starts empty again
        assert after.stdout.split() == baseline + ["fresh"]
        assert not any(name.startswith("f") and name[1:].isdigit() for name in baseline)
        uid = ws.uid
    assert uid_processes(uid) == []


def test_a_3000_level_tree_cannot_crash_listing_copying_or_cleanup(sandbox):
    with Workspace.create(None, quota_mb=64) as ws:
        r = sandbox.run(["python", "-c", "import os\nfor _ in range(3000):\n    os.mkdir('d'); os.chdir('d')\n"
                         "open('deep.txt', 'w').write('x')\n"], ws, timeout_s=60)
        assert r.ok, r.output
        ws.write_text("top.txt", "y")
        t0 = time.perf_counter()
        assert ws.files() == ["top.txt"]  # bounded depth: no RecursionError, no PATH_MAX error
        assert time.perf_counter() - t0 < 5
        with Workspace.create(None, quota_mb=64) as dst:
            skipped = copy_tree(ws.root, dst.root, dst.uid, dst.gid)
            assert any("deeper than" in s for s in skipped) and dst.files() == ["top.txt"]
        home = ws.home
    assert not home.exists()  # closing removed the whole tree


def test_default_limits_still_run_ordinary_work(sandbox, ws):
    r = sandbox.run(["python", "-c", "import numpy, multiprocessing as mp\n"
                     "with mp.Pool(2) as p: print(sum(p.map(abs, range(-5, 5))))"], ws,
                    limits=replace(sandbox.limits, timeout_s=60))
    assert r.ok and r.stdout.strip() == "25", r.output


def test_every_process_of_a_call_is_in_the_episode_cgroup_unprivileged_and_killed_at_once():
    # The chain joins the cgroup through v1 `tasks` (no global lock, cgroup.py) and drops root
    # through nsenter or setpriv (sandbox_cmdline.py): every host process of the call must be in
    # the episode's cgroup, hold the workspace uid/gid in all four slots, no supplementary group
    # and no capability; one `kill()` ends them all, and the episode's limits come back after it.
    if os.geteuid() != 0:
        pytest.skip("the uid drop and the per-episode cgroup need root")
    sandbox = Sandbox(Limits(timeout_s=30, cpu_s=30))
    with Workspace.create(None, quota_mb=16) as ws:
        cg = sandbox.cgroup(ws)
        if cg is None:
            pytest.skip(f"this machine gives no per-episode cgroup: {EpisodeCgroup.reason()} (docs/security.md)")
        limits_before = {d: (d / "pids.max").read_text() for d in cg.dirs if (d / "pids.max").exists()}
        with sandbox.spawn("sleep 60 & sleep 60 & echo up; wait", ws, lifetime_s=30) as proc:
            assert "up" in proc.read(timeout=10, until="up")
            host = uid_processes(ws.uid)
            assert len(host) >= 4, host  # bwrap, its pid 1 shell, two sleeps
            for d in cg.dirs:  # in every hierarchy: memory, pids (and v2 where that is what tracks)
                assert set(host) <= {int(x) for x in (d / "cgroup.procs").read_text().split()}, (d, host)
            for pid in host:
                status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines())
                assert status["Uid"].split() == [str(ws.uid)] * 4 and status["Gid"].split() == [str(ws.gid)] * 4
                assert status["Groups"].strip() == ""
                assert int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0
            assert cg.kill(timeout_s=5)
            assert cg.pids() == set()
            # a killed process leaves the cgroup before it finishes exiting; one that escaped it (a
            # `sleep 60`) would still be alive after this wait. Zombies wait for their parent.
            deadline = time.monotonic() + 2
            while live_processes(ws.uid) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert live_processes(ws.uid) == []
        assert {d: (d / "pids.max").read_text() for d in limits_before} == limits_before
        assert sandbox.run("echo again", ws).stdout == "again\n"  # the episode goes on after a kill
