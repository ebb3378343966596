"""A tmux terminal that lives inside the sandbox for a whole episode (for Terminus-style harnesses).

    term = TmuxTerminal(sandbox, workspace, width=160, height=40)
    term.send_keys("ls -la", "Enter")           # tmux key names, or literal=True for raw text
    term.send_keys("echo hi\\n", literal=True)
    time.sleep(0.5)
    screen = term.capture()                    # the visible pane (40 lines)
    history = term.capture(history=True)       # scrollback too
    term.close()

How (HARNESSES.md, "tmux inside"): one long-lived sandbox runs the tmux server in the
foreground (`tmux -D`), so everything the agent types runs in that sandbox, as the workspace
uid, under its limits. Each client command (new-session, send-keys, capture-pane) runs in its
own short-lived sandbox on the same workspace; the two meet through the server's socket.
Sessions are created from inside a sandbox, never from the host. The socket lives in a
private directory of the workspace bound at /run/harnessrl-tmux in both sandboxes, not in
/app, so it never shows up in the agent's files, `git status`, or the tests.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from harnessrl.tasks.sandbox import Bind, Sandbox, SandboxProcess, SandboxResult
from harnessrl.tasks.workspace import Workspace

SOCKET_DIR = "/run/harnessrl-tmux"
SOCKET = f"{SOCKET_DIR}/sock"
SESSION = "main"


class TerminalError(RuntimeError):
    """The tmux server or a client command failed (not something the agent typed)."""


class TmuxTerminal:
    """A 160x40 (by default) tmux pane running bash inside the sandbox."""

    def __init__(self, sandbox: Sandbox, workspace: Workspace, *, width: int = 160, height: int = 40,
                 lifetime_s: float = 3600.0, shell: Sequence[str] = ("bash", "--noprofile", "--norc"),
                 history_limit: int = 10_000, env: Mapping[str, str] | None = None, network=None):
        self.sandbox = sandbox
        self.workspace = workspace
        self.width, self.height = width, height
        socket_dir = workspace.private_dir("tmux")
        self._bind = Bind(socket_dir, SOCKET_DIR, writable=True)
        self._server: SandboxProcess = sandbox.spawn(
            ["tmux", "-D", "-S", SOCKET, "-f", "/dev/null"], workspace, binds=[self._bind], lifetime_s=lifetime_s,
            env=env, network=network,  # the shells in it join the episode's network (task images: services.py)
        )
        deadline = time.monotonic() + 10.0
        while not (socket_dir / "sock").exists():
            if not self._server.alive or time.monotonic() > deadline:
                out = self._server.read()
                self._server.close()
                raise TerminalError(f"the tmux server did not start: {out.strip() or 'no output'}")
            time.sleep(0.01)
        # The socket file exists from the server's bind(), a moment before its listen(): a client
        # connecting in between gets "no server running" (the start-up race of issue 15). Retry
        # the first command until the server answers, or the deadline.
        while True:
            r = self._client("set-option", "-g", "history-limit", str(history_limit), check=False)
            if r.ok:
                break
            if not self._server.alive or time.monotonic() > deadline:
                out = self._server.read()
                self._server.close()
                raise TerminalError(f"the tmux server did not answer: {r.status} {r.exit_code} "
                                    f"{r.stderr.strip()} {out.strip()}")
            time.sleep(0.02)
        self._client("new-session", "-d", "-s", SESSION, "-x", str(width), "-y", str(height), *shell)

    def _client(self, *args: str, check: bool = True) -> SandboxResult:
        result = self.sandbox.run(["tmux", "-S", SOCKET, *args], self.workspace, binds=[self._bind], timeout_s=10)
        if check and not result.ok:
            raise TerminalError(f"tmux {args[0]} failed: {result.status} {result.exit_code} {result.stderr.strip()}")
        return result

    @property
    def alive(self) -> bool:
        return self._server.alive

    def send_keys(self, *keys: str, literal: bool = False) -> None:
        """Type into the pane. Without `literal`, tmux key names ("Enter", "C-c") are keys."""
        if keys:
            self._client("send-keys", "-t", SESSION, *(["-l"] if literal else []), "--", *keys)

    def capture(self, history: bool = False) -> str:
        """The pane's text: the visible screen, or the whole scrollback with `history`."""
        args = ["capture-pane", "-p", "-J", "-t", SESSION] + (["-S", "-"] if history else [])
        return self._client(*args).stdout

    def close(self) -> None:
        """Kill the server sandbox and everything running in it."""
        self._server.close()

    def __enter__(self) -> TmuxTerminal:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
