"""The sandbox's everyday contract: commands, stdin/env/binds, statuses, refusal without bwrap."""

from __future__ import annotations

import os
import warnings

import pytest

from harnessrl.tasks.process import STATUSES
from harnessrl.tasks.sandbox import Bind, Sandbox, SandboxUnavailable, UnsafeSandboxWarning

pytestmark = pytest.mark.sandbox


def test_string_and_argv_commands(sandbox, ws):
    r = sandbox.run("echo out; echo err >&2; exit 3", ws)
    assert (r.status, r.exit_code, r.stdout, r.stderr) == ("ok", 3, "out\n", "err\n")
    assert not r.ok and r.output == "out\nerr\n"
    r = sandbox.run(["python", "-c", "import sys, os; print(os.getcwd(), sys.argv[1:])", "a b", "$HOME"], ws)
    assert r.ok and r.stdout == "/app ['a b', '$HOME']\n"  # argv is not re-parsed by a shell
    assert set(STATUSES) == {"ok", "timeout", "oom", "output_truncated", "killed", "sandbox_error"}


def test_stdin_env_cwd_and_identity(sandbox, ws):
    ws.write_text("sub/f.txt", "x")
    r = sandbox.run("cat; echo \"$GREETING $HOME $USER\"; pwd; id -un", ws, stdin="piped\n",
                    env={"GREETING": "hi"}, cwd="/app/sub")
    assert r.stdout.splitlines() == ["piped", "hi /tmp agent", "/app/sub", "agent"]
    big = "y" * 3_000_000  # more than a pipe buffer: written while output is read
    r = sandbox.run("wc -c", ws, stdin=big)
    assert r.stdout.strip() == str(len(big))


def test_files_written_in_the_sandbox_belong_to_the_workspace(sandbox, ws):
    assert sandbox.run("mkdir -p d && echo hello > d/new.txt", ws).ok
    assert ws.read_text("d/new.txt") == "hello\n"
    ws.write_text("d/from_host.txt", "host\n")  # and the agent can edit what the harness wrote
    assert sandbox.run("echo more >> d/from_host.txt && rm d/new.txt", ws).ok
    assert ws.read_text("d/from_host.txt") == "host\nmore\n" and not ws.exists("d/new.txt")


def test_binds_read_only_and_writable(sandbox, ws, tmp_path):
    ro, rw = ws.private_dir("ro"), ws.private_dir("rw")  # sources the workspace uid can reach
    (ro / "data.txt").write_text("data\n")
    r = sandbox.run("cat /data/data.txt; echo x > /data/new 2>/dev/null || echo ro-refused; echo y > /out/made",
                    ws, binds=[Bind(ro, "/data"), Bind(rw, "/out", writable=True)])
    assert r.stdout.splitlines() == ["data", "ro-refused"]
    assert (rw / "made").read_text() == "y\n" and not (ro / "new").exists()
    if os.geteuid() == 0:  # a root-only source is reported, not silently empty
        hidden = tmp_path / "root-only"
        hidden.mkdir()
        tmp_path.chmod(0o700)
        r = sandbox.run("true", ws, binds=[Bind(hidden, "/x")])
        assert r.status == "sandbox_error" and "Permission denied" in r.detail


def test_sandbox_errors_are_reported_not_raised(sandbox, ws, tmp_path):
    r = sandbox.run("true", ws, binds=[Bind(tmp_path / "missing", "/x")])
    assert r.status == "sandbox_error" and "missing" in r.detail
    r = sandbox.run("true", ws, cwd="/no/such/dir")
    assert r.status == "sandbox_error" and r.exit_code is None


def test_per_call_timeout_and_limits_do_not_leak(sandbox, ws):
    assert sandbox.run("sleep 5", ws, timeout_s=0.5).status == "timeout"
    assert sandbox.run("sleep 0.2; echo done", ws).stdout == "done\n"  # the instance's limits still apply


def test_refuses_without_bwrap_unless_unsafe(ws):
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        Sandbox(bwrap="/nonexistent/bwrap", unsafe=False)
    with pytest.warns(UnsafeSandboxWarning, match="NO"):
        unsafe = Sandbox(bwrap="/nonexistent/bwrap", unsafe=True)
    r = unsafe.run("pwd; echo hi", ws)
    assert r.ok and not r.sandboxed
    assert r.stdout.splitlines() == [str(ws.root), "hi"]  # runs in the workspace, with no /app


def test_unsafe_mode_from_the_environment(monkeypatch):
    monkeypatch.setenv("HARNESSRL_UNSAFE_SANDBOX", "1")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert Sandbox(bwrap="/nonexistent/bwrap").unsafe
    assert any(issubclass(w.category, UnsafeSandboxWarning) for w in caught)
    monkeypatch.setenv("HARNESSRL_UNSAFE_SANDBOX", "0")
    with pytest.raises(SandboxUnavailable):
        Sandbox(bwrap="/nonexistent/bwrap")


def test_sandbox_pickles_for_process_pools(sandbox, ws):
    import pickle

    clone = pickle.loads(pickle.dumps(sandbox))
    assert clone.run("echo ok", ws).stdout == "ok\n"


def test_a_spawned_program_reads_dev_null_and_its_exit_code_can_be_awaited(sandbox, ws):
    proc = sandbox.spawn(["/bin/sh", "-c", "cat; echo read-eof; exit 3"], ws, stdin=False, lifetime_s=30)
    try:
        assert proc.wait(timeout=20) == 3  # stdin is /dev/null: cat ends at once, nothing hangs
        assert proc.read().strip() == "read-eof"
        with pytest.raises(BrokenPipeError):
            proc.write("x")
    finally:
        assert proc.close() == 3
    running = sandbox.spawn(["sleep", "30"], ws, lifetime_s=30)
    assert running.wait(timeout=0.2) is None
    running.close()
