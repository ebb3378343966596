"""Adversarial commands: each is contained, gets the right status, and leaves the host unchanged.

These run as root on purpose when the suite runs as root: that is the dangerous case
(HARNESSES.md): bwrap keeps capabilities for root and RLIMIT_NPROC does not apply to uid 0.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from harnessrl.tasks.base import BUILTIN_DIR, load_suite_folder
from harnessrl.tasks.runtime import TaskRuntime
from harnessrl.tasks.sandbox import Sandbox
from harnessrl.tasks.workspace import Workspace, WorkspaceError

from .conftest import uid_processes

pytestmark = pytest.mark.sandbox


def test_write_outside_the_workspace_is_refused(sandbox, ws):
    marker = f"harnessrl-escape-{uuid.uuid4().hex}"
    targets = [f"/etc/{marker}", f"/usr/{marker}", f"/root/{marker}", f"{Path.cwd()}/{marker}", f"/{marker}",
               f"{sys.prefix}/{marker}", f"{ws.home}/{marker}"]
    script = "; ".join(f"echo pwned > {t} 2>/dev/null && echo WROTE {t}" for t in targets)
    r = sandbox.run(script + f"; echo fine > /tmp/{marker}; cat /tmp/{marker}", ws)
    assert r.status == "ok"
    # A target under /tmp (a checkout in /tmp puts cwd there) lands in the sandbox's private tmpfs:
    # writing it is allowed; that it never reaches the host is checked below for every target.
    wrote = [line.split(" ", 1)[1] for line in r.stdout.splitlines() if line.startswith("WROTE ")]
    assert [t for t in wrote if not t.startswith("/tmp/")] == []
    assert r.stdout.splitlines()[-1] == "fine"  # the sandbox's own /tmp works...
    for t in [*targets, f"/tmp/{marker}"]:  # ...and is not the host's
        assert not Path(t).exists(), t


def test_capabilities_dropped_and_readonly_binds_stay_readonly(sandbox, ws):
    r = sandbox.run(
        "grep CapEff /proc/self/status; mount -o remount,rw /usr 2>&1; echo remount=$?; "
        "mount -t tmpfs none /usr/local 2>&1; echo tmpfs=$?; touch /usr/bin/harnessrl-x 2>&1; echo touch=$?",
        ws,
    )
    assert "CapEff:\t0000000000000000" in r.stdout
    assert "remount=0" not in r.stdout and "tmpfs=0" not in r.stdout and "touch=0" not in r.stdout
    assert not Path("/usr/bin/harnessrl-x").exists()


def test_user_namespaces_and_setuid_cannot_regain_root(sandbox, ws):
    r = sandbox.run(
        "unshare -r true 2>&1; echo unshare=$?; python -c 'import os; os.setuid(0)' 2>&1; echo setuid=$?; "
        "id -u", ws,
    )
    assert "unshare=0" not in r.stdout and "setuid=0" not in r.stdout
    assert r.stdout.strip().splitlines()[-1] == str(ws.uid)
    if os.geteuid() == 0:
        assert ws.uid != 0


def test_hidden_tests_are_not_reachable(sandbox):
    suite = load_suite_folder(BUILTIN_DIR / "code-v1")
    task = suite["fix-median-even"]
    hidden_name = task.test_files["requirement"][0].split("/")[-1]
    # Bind the suite folder on purpose: the runtime must still hide it.
    exposed = Sandbox(sandbox.limits, ro_paths=[BUILTIN_DIR])
    with TaskRuntime(task, exposed) as rt:
        r = rt.run(f"ls /app; cat {task.tests_dir}/requirement/*; find / -name '{hidden_name}' 2>/dev/null; "
                   f"ls {BUILTIN_DIR}/code-v1 | head -3", timeout_s=60)
    assert r.status == "ok"
    assert r.stdout.splitlines() == ["stats.py"]  # nothing but the workspace shows up
    assert "No such file" in r.stderr


def test_no_network_only_loopback(sandbox, ws):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    code = (
        "import socket\n"
        "for addr in [('127.0.0.1', %d), ('1.1.1.1', 53), ('8.8.8.8', 443), ('10.0.0.1', 80)]:\n"
        "    s = socket.socket(); s.settimeout(2)\n"
        "    try:\n"
        "        s.connect(addr); print('CONNECTED', addr)\n"
        "    except OSError as e:\n"
        "        print('refused', addr, type(e).__name__)\n"
        "print(open('/proc/net/dev').read())\n"
    ) % port
    r = sandbox.run(["python", "-c", code], ws)
    assert r.status == "ok", r.stderr
    assert "CONNECTED" not in r.stdout
    assert r.stdout.count("refused") == 4
    interfaces = [ln.split(":")[0].strip() for ln in r.stdout.splitlines() if ":" in ln and "|" not in ln]
    assert [i for i in interfaces if not i.startswith("(")] == ["lo"]
    with pytest.raises(TimeoutError):
        listener.accept()  # nothing from the sandbox ever reached the host's listener
    listener.close()


def test_fork_bomb_is_contained(sandbox, ws):
    limits = replace(sandbox.limits, nproc=64, timeout_s=4)
    t0 = time.perf_counter()
    r = sandbox.run("b() { b & b & wait; }; b", ws, limits=limits)  # every process stays alive
    assert r.status == "timeout"
    assert "Resource temporarily unavailable" in r.stderr  # RLIMIT_NPROC held the bomb
    assert time.perf_counter() - t0 < 15
    t1 = time.perf_counter()
    subprocess.run(["true"], check=True)  # the host can still fork promptly
    assert time.perf_counter() - t1 < 2
    time.sleep(0.2)
    assert uid_processes(ws.uid) == [] or os.geteuid() != 0  # nothing left behind


def test_infinite_loop_hits_the_wall_clock(sandbox, ws):
    r = sandbox.run("while :; do :; done", ws, timeout_s=1)
    assert r.status == "timeout" and r.exit_code is None
    assert r.wall_time < 4


def test_cpu_limit_ends_a_busy_process(sandbox, ws):
    limits = replace(sandbox.limits, cpu_s=1, timeout_s=30)
    r = sandbox.run(["python", "-c", "while True: pass"], ws, limits=limits)
    assert r.status == "timeout"
    assert "CPU" in r.detail
    assert r.wall_time < 15


def test_a_gigabyte_of_output_is_truncated(sandbox, ws):
    limits = replace(sandbox.limits, output_bytes=200_000)
    r = sandbox.run("head -c 1000000000 /dev/zero | tr '\\0' x", ws, limits=limits)
    assert r.status == "output_truncated"
    assert len(r.stdout) + len(r.stderr) <= 200_000
    assert r.wall_time < 10


def test_filling_the_disk_stops_at_the_workspace_quota(sandbox):
    if os.geteuid() != 0:
        pytest.skip("the workspace quota is a tmpfs mount, which needs root")
    free_before = shutil.disk_usage("/").free
    with Workspace.create(None, quota_mb=32) as small:
        r = sandbox.run("for i in $(seq 1 100); do head -c 8000000 /dev/zero > /app/f$i || exit 7; done", small)
        assert r.status == "ok" and r.exit_code == 7
        assert "No space left" in r.stderr
        used = sum(p.stat().st_size for p in small.root.iterdir())
        assert used <= 32 << 20
    assert abs(shutil.disk_usage("/").free - free_before) < 200 << 20


def test_file_size_limit_kills_the_writer(sandbox, ws):
    limits = replace(sandbox.limits, file_mb=4)
    r = sandbox.run("head -c 50000000 /dev/zero > /app/big", ws, limits=limits)
    assert r.status == "killed" and "file-size" in r.detail
    assert (ws.root / "big").stat().st_size <= 4 << 20


def test_private_tmp_and_shm_are_bounded(sandbox):
    # As root both live on the episode's scratch tmpfs (scratch_mb for the whole episode);
    # without root each is a bwrap tmpfs of Limits.tmp_mb.
    limits = replace(sandbox.limits, tmp_mb=8, file_mb=64)
    with Workspace.create(None, quota_mb=16, scratch_mb=8) as ws:
        r = sandbox.run("head -c 20000000 /dev/zero > /tmp/x; echo tmp=$?; rm -f /tmp/x; "
                        "head -c 20000000 /dev/zero > /dev/shm/x; echo shm=$?", ws, limits=limits)
    assert "tmp=0" not in r.stdout and "shm=0" not in r.stdout
    assert r.stderr.count("No space left") == 2


def test_memory_limit_reports_oom(sandbox, ws):
    limits = replace(sandbox.limits, memory_mb=256)
    r = sandbox.run(["python", "-c", "x = bytearray(2 * 1024**3); print(len(x))"], ws, limits=limits)
    assert r.status == "oom"
    assert r.exit_code not in (0, None)


def test_signalling_the_parent_or_the_host_does_nothing(sandbox, ws):
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        r = sandbox.run(f"kill -9 $PPID; kill -9 1; kill -9 {os.getpid()}; kill -9 {bystander.pid}; kill -9 -1; "
                        "echo still-here", ws)
        assert r.status in ("ok", "killed")
        assert bystander.poll() is None  # the host process survived
        os.kill(os.getpid(), 0)  # and so did we
    finally:
        bystander.kill()
        bystander.wait()


def test_background_processes_die_with_the_command(sandbox, ws):
    r = sandbox.run("sleep 300 & (sleep 300 &) ; setsid sleep 300 & echo started", ws)
    assert r.status == "ok" and "started" in r.stdout
    time.sleep(0.2)
    if os.geteuid() == 0:
        assert uid_processes(ws.uid) == []


def test_symlink_escape_through_file_operations(sandbox, ws):
    passwd_before = Path("/etc/passwd").read_bytes()
    r = sandbox.run("ln -s /etc/passwd x; ln -s / root; mkdir d; ln -s /etc d/sub; ln -s ../../../etc up; "
                    "echo real > real.txt; ln -s real.txt alias; ln -s /app/real.txt abs_alias", ws)
    assert r.ok, r.stderr
    for bad in ["x", "root/etc/passwd", "d/sub/passwd", "up/passwd", "../etc/passwd", "/etc/passwd", "d/sub/new"]:
        with pytest.raises(WorkspaceError):
            ws.write_text(bad, "pwned\n")
        with pytest.raises(WorkspaceError):
            ws.read_text(bad)
    assert Path("/etc/passwd").read_bytes() == passwd_before
    assert not Path("/etc/new").exists()
    # Links that stay inside the workspace keep working, and the write lands on the target.
    ws.write_text("alias", "via alias\n")
    assert ws.read_text("real.txt") == "via alias\n"
    ws.str_replace("abs_alias", "via alias", "via absolute alias")
    assert (ws.root / "real.txt").read_text() == "via absolute alias\n"
    assert os.path.islink(ws.root / "alias")


def test_symlink_swapped_in_during_writes_never_escapes(sandbox, ws):
    target = Path("/etc") / f"harnessrl-race-{uuid.uuid4().hex}"
    swapper = sandbox.spawn("while :; do mkdir -p d; rm -rf d; ln -s /etc d; rm -f d; done", ws, lifetime_s=30)
    stop = time.monotonic() + 1.5
    writes = refusals = 0
    try:
        while time.monotonic() < stop:
            try:
                ws.write_text(f"d/{target.name}", "x")
                writes += 1
            except WorkspaceError:
                refusals += 1
    finally:
        swapper.close()
    assert not target.exists()
    assert writes + refusals > 10


def test_another_workspace_is_invisible(sandbox, ws):
    with Workspace.create(None, quota_mb=16) as other:
        secret = f"secret-{uuid.uuid4().hex}"
        other.write_text("secret.txt", secret)
        r = sandbox.run(f"cat {other.root}/secret.txt 2>&1; ls {other.home.parent} 2>&1; "
                        f"grep -rs {secret} /tmp /app /run 2>/dev/null; echo done", ws)
        assert secret not in r.stdout
        if os.geteuid() == 0:
            assert other.uid != ws.uid


def test_proc_shows_only_the_sandbox(sandbox, ws):
    os.environ["HARNESSRL_TEST_SECRET"] = "hunter2"
    try:
        r = sandbox.run(
            f"ls /proc | grep -E '^[0-9]+$' | wc -l; cat /proc/{os.getpid()}/environ 2>&1; "
            "cat /proc/1/environ | tr '\\0' '\\n'; env; echo 1 > /proc/sys/kernel/sysrq 2>&1; echo sysrq=$?; "
            "ls /proc/1/root/", ws,
        )
    finally:
        del os.environ["HARNESSRL_TEST_SECRET"]
    lines = r.stdout.splitlines()
    assert int(lines[0]) < 10  # sh, bash and the few commands of this pipeline
    assert "hunter2" not in r.stdout
    assert "sysrq=0" not in r.stdout
    assert "app" in lines and "var" not in lines and "home" not in lines  # pid 1's root is the sandbox's


def test_python_tree_is_read_only(sandbox, ws):
    r = sandbox.run(f"touch {sys.prefix}/harnessrl-x 2>&1; echo touch=$?; "
                    "python -m pip install --no-index nothing-here 2>&1 | tail -1; "
                    "python -c 'import pytest; print(\"pytest ok\")'", ws)
    assert "touch=0" not in r.stdout
    assert "pytest ok" in r.stdout
    assert not Path(sys.prefix, "harnessrl-x").exists()


def test_fifos_never_block_file_operations(sandbox, ws):
    assert sandbox.run("mkfifo /app/pipe", ws).ok
    t0 = time.perf_counter()
    with pytest.raises(WorkspaceError):
        ws.read_text("pipe")
    with pytest.raises(WorkspaceError):
        ws.write_text("pipe", "x")
    assert time.perf_counter() - t0 < 1


def test_many_concurrent_sandboxes_do_not_starve_each_other(sandbox):
    """A fork bomb in one workspace must not make forks fail in another (separate uids)."""
    if os.geteuid() != 0:
        pytest.skip("separate uids per workspace need root")
    with Workspace.create(None) as bomb_ws, Workspace.create(None) as good_ws:
        limits = replace(sandbox.limits, nproc=32, timeout_s=4)
        bomb = threading.Thread(target=sandbox.run, args=(":(){ :|:& };:", bomb_ws), kwargs={"limits": limits})
        bomb.start()
        time.sleep(1.0)
        r = sandbox.run("for i in 1 2 3 4 5; do (true) || exit 9; done; echo forks-fine", good_ws)
        bomb.join()
    assert r.ok and "forks-fine" in r.stdout
