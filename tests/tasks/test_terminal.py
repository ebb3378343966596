"""Long-lived sandboxed processes and the tmux terminal that Terminus-style harnesses drive."""

from __future__ import annotations

import os
import time

import pytest

from harnessrl.tasks.terminal import TmuxTerminal

from .conftest import uid_processes

pytestmark = pytest.mark.sandbox


def wait_for(term: TmuxTerminal, text: str, timeout: float = 5.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        screen = term.capture()
        if text in screen or time.monotonic() > deadline:
            return screen
        time.sleep(0.05)


def test_spawned_shell_keeps_state_between_inputs(sandbox, ws):
    with sandbox.spawn(["bash", "--noprofile", "--norc"], ws, lifetime_s=30) as shell:
        shell.write("cd /tmp && X=42\n")
        shell.write("echo \"$PWD $X\"; echo MARK\n")
        out = shell.read(timeout=5, until="MARK")
        assert "/tmp 42" in out
        shell.write("id -u; echo MARK2\n")
        assert str(ws.uid) in shell.read(timeout=5, until="MARK2")
    assert not shell.alive


def test_spawned_process_is_killed_at_its_lifetime(sandbox, ws):
    proc = sandbox.spawn("sleep 100", ws, lifetime_s=1)
    time.sleep(2.0)
    assert not proc.alive
    proc.close()


def test_spawn_output_buffer_is_bounded(sandbox, ws):
    with sandbox.spawn("head -c 3000000 /dev/zero | tr '\\0' y; sleep 5", ws, lifetime_s=20, buffer_bytes=10_000) as p:
        deadline = time.monotonic() + 10
        while p.dropped_bytes < 2_990_000 and time.monotonic() < deadline:
            time.sleep(0.05)
        out = p.read()
    assert len(out) <= 10_000 and p.dropped_bytes >= 2_990_000


def test_tmux_terminal_runs_commands_inside_the_sandbox(sandbox, ws):
    with TmuxTerminal(sandbox, ws, width=120, height=30) as term:
        term.send_keys("cd /app && echo hello > made.txt && export FOO=bar", "Enter")
        term.send_keys("echo \"foo=$FOO uid=$(id -u)\"\n", literal=True)
        screen = wait_for(term, "foo=bar")
        assert f"foo=bar uid={ws.uid}" in screen  # the shell persisted between keystrokes
        assert ws.read_text("made.txt") == "hello\n"
        assert ws.files() == ["made.txt"]  # the tmux socket is not in the workspace
        term.send_keys("sleep 100", "Enter")
        time.sleep(0.3)
        term.send_keys("C-c")
        term.send_keys("echo after-interrupt", "Enter")
        assert "after-interrupt" in wait_for(term, "after-interrupt\n")
        term.send_keys("cat /etc/hostname /proc/1/cmdline; curl -sS --max-time 2 http://1.1.1.1 2>&1 | head -1", "Enter")
        screen = wait_for(term, "curl:")
        assert "tmux" in screen  # pid 1 is the sandbox's init running tmux, not the host's
        for i in range(60):
            term.send_keys(f"echo line{i}", "Enter")
        full = wait_for(term, "line59\n")
        assert "line59" in full
        assert "line0\n" in term.capture(history=True) or "line0" in term.capture(history=True)
        assert len(term.capture().splitlines()) <= 30
    time.sleep(0.2)
    if os.geteuid() == 0:
        assert uid_processes(ws.uid) == []  # closing killed the server and the shells
