"""Running one confined process: feeding and capping its I/O, the wall clock, and the status.

`Sandbox` (sandbox.py) builds the command line; this module runs it. `SandboxResult` is what a
one-shot command returns; `SandboxProcess` is a long-lived one (stdin pipe, buffered output).
See sandbox.py for what each status means.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

STATUSES = ("ok", "timeout", "oom", "output_truncated", "killed", "sandbox_error")
_OOM_MARKERS = re.compile(rb"MemoryError|Cannot allocate memory|std::bad_alloc|out of memory", re.IGNORECASE)


@dataclass(frozen=True)
class Limits:
    """Per-command resource limits. `replace(limits, timeout_s=5)` for a variant."""

    timeout_s: float = 60.0  # wall clock; the whole sandbox is killed after it
    cpu_s: int = 120  # RLIMIT_CPU per process
    memory_mb: int = 4096  # RLIMIT_AS per process (virtual memory: generous for Python + numpy)
    nproc: int = 256  # RLIMIT_NPROC for the workspace uid (all its processes)
    file_mb: int = 64  # RLIMIT_FSIZE: the largest file a process may write
    nofile: int = 1024  # RLIMIT_NOFILE
    output_bytes: int = 1_000_000  # stdout + stderr kept; beyond it the command is killed
    tmp_mb: int = 256  # size of the sandbox's private /tmp and /dev/shm (without root: a bwrap tmpfs each)
    episode_memory_mb: int = 4096  # memory of ALL the episode's processes together (cgroup, see cgroup.py)


@dataclass
class SandboxResult:
    """What one sandboxed command did."""

    status: str
    exit_code: int | None  # None when the sandbox killed it or never started it
    stdout: str
    stderr: str
    wall_time: float
    signal: int | None = None  # the signal that ended it, when known (exit code 128+N)
    detail: str = ""  # why the status is not `ok`, in words
    sandboxed: bool = True  # False only in unsafe mode

    @property
    def ok(self) -> bool:
        """Ran to completion and exited 0."""
        return self.status == "ok" and self.exit_code == 0

    @property
    def output(self) -> str:
        """stdout then stderr, as a terminal would interleave them roughly."""
        if self.stdout and self.stderr and not self.stdout.endswith("\n"):
            return self.stdout + "\n" + self.stderr
        return self.stdout + self.stderr


def read_all(fd: int) -> bytes:
    chunks = []
    try:
        os.set_blocking(fd, False)
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _owner(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def kill_sandbox(proc: subprocess.Popen, uid: int) -> None:
    """Kill a sandbox so nothing is left behind, zombies included.

    SIGKILL to the sandbox's pid 1 (bwrap's child, owned by the workspace uid — checked, so a
    recycled pid is never hit) empties the pid namespace and lets bwrap reap it and exit;
    killing bwrap first would orphan that pid 1 to the host's init, which may reap slowly or
    never. The process group is killed after as a fallback.
    """
    if proc.poll() is None:
        for child in _children(proc.pid):
            if _owner(child) == uid:
                try:
                    os.kill(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def communicate(proc: subprocess.Popen, stdin: bytes | None, timeout: float, cap: int,
                uid: int) -> tuple[bytes, bytes, bool, bool]:
    """Feed stdin, collect stdout/stderr up to `cap` bytes in total, enforce the wall clock."""
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    bufs = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    sel.register(proc.stdout, selectors.EVENT_READ)
    sel.register(proc.stderr, selectors.EVENT_READ)
    pending = memoryview(stdin or b"")
    if pending:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin, selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    timed_out = truncated = False
    total = 0
    while sel.get_map():
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        for key, _ in sel.select(min(left, 1.0)):
            if key.fileobj is proc.stdin:
                try:
                    n = os.write(proc.stdin.fileno(), pending[:65536])
                    pending = pending[n:]
                except (BrokenPipeError, BlockingIOError) as err:
                    if isinstance(err, BlockingIOError):
                        continue
                    pending = pending[:0]
                if not pending:
                    sel.unregister(proc.stdin)
                    proc.stdin.close()
                continue
            chunk = os.read(key.fileobj.fileno(), 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                continue
            room = cap - total
            bufs[key.fileobj] += chunk[:room]
            total += min(len(chunk), room)
            if len(chunk) > room:
                truncated = True
                break
        if truncated:
            break
    if timed_out or truncated:
        kill_sandbox(proc, uid)
    sel.close()
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if not f.closed:
            f.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        kill_sandbox(proc, uid)
        proc.wait()
    return bytes(bufs[proc.stdout]), bytes(bufs[proc.stderr]), timed_out, truncated


def classify_exit(code: int, out: bytes, err: bytes, wall: float, timed_out: bool, truncated: bool,
                  status_json: bytes, sandboxed: bool, limits: Limits) -> SandboxResult:
    stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    def result(status: str, exit_code: int | None, detail: str = "", sig: int | None = None) -> SandboxResult:
        return SandboxResult(status, exit_code, stdout, stderr, wall, sig, detail, sandboxed)

    if timed_out:
        return result("timeout", None, f"wall-clock limit of {limits.timeout_s:g} s")
    if truncated:
        return result("output_truncated", None, f"output exceeded {limits.output_bytes} bytes")
    if sandboxed:
        lines = status_json.decode(errors="replace").splitlines()
        statuses = [json.loads(line) for line in lines if line.strip().startswith("{")]
        if not any("exit-code" in s for s in statuses):
            why = stderr.strip().splitlines()[-1] if stderr.strip() else f"bwrap exited {code}"
            return result("sandbox_error", None, why)
    if code == 125 and b"harnessrl sandbox: cannot set resource limits" in err:
        return result("sandbox_error", None, "cannot set resource limits")
    if code < 0:  # unsafe mode: the direct child died of a signal
        code = 128 - code
    sig = code - 128 if 128 < code < 128 + 65 else None
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and wall < limits.timeout_s and _cpu_bound_kill(wall, limits)):
        return result("timeout", code, f"CPU-time limit of {limits.cpu_s} s", sig)
    if code != 0 and _OOM_MARKERS.search(err[-4096:]):
        return result("oom", code, f"memory limit of {limits.memory_mb} MB", sig)
    if sig is not None and sig in (signal.SIGKILL, signal.SIGXFSZ, signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT,
                                   signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE, signal.SIGILL):
        detail = "file-size limit" if sig == signal.SIGXFSZ else f"signal {signal.Signals(sig).name}"
        return result("killed", code, detail, sig)
    return result("ok", code)


def _cpu_bound_kill(wall: float, limits: Limits) -> bool:
    # The hard CPU limit ends a process with SIGKILL; only plausible once cpu_s has elapsed.
    return wall >= limits.cpu_s * 0.9


class SandboxProcess:
    """A long-lived sandboxed process: write to its stdin, read its (merged) output.

    Output is collected by a reader thread into a buffer of at most `buffer_bytes`; when more
    arrives before it is read, the oldest bytes are dropped and `dropped_bytes` counts them.
    """

    def __init__(self, proc: subprocess.Popen, lifetime_s: float, buffer_bytes: int, uid: int, on_close=None):
        self._proc = proc
        self._on_close = on_close  # e.g. remove the call's /tmp once the process is gone
        self._uid = uid
        self._buf = bytearray()
        self._cap = buffer_bytes
        self.dropped_bytes = 0
        self._cond = threading.Condition()
        self._eof = False
        self.started = time.monotonic()
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()
        self._timer = threading.Timer(lifetime_s, self.kill)
        self._timer.daemon = True
        self._timer.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _pump(self) -> None:
        fd = self._proc.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            with self._cond:
                if not chunk:
                    self._eof = True
                    self._cond.notify_all()
                    return
                self._buf += chunk
                if len(self._buf) > self._cap:
                    extra = len(self._buf) - self._cap
                    del self._buf[:extra]
                    self.dropped_bytes += extra
                self._cond.notify_all()

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def write(self, data: str | bytes) -> None:
        """Send bytes to the process's stdin (raises BrokenPipeError if it has exited, or was
        started with stdin /dev/null)."""
        if self._proc.stdin is None:
            raise BrokenPipeError("this process reads /dev/null")
        self._proc.stdin.write(data.encode() if isinstance(data, str) else data)
        self._proc.stdin.flush()

    def read(self, timeout: float = 0.0, until: str | None = None) -> str:
        """Return (and consume) the output so far; wait up to `timeout` s for some output, or
        for `until` to appear when given."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                text = self._buf.decode("utf-8", "replace")
                done = (until in text) if until is not None else bool(self._buf)
                left = deadline - time.monotonic()
                if done or self._eof or left <= 0:
                    break
                self._cond.wait(left)
            self._buf.clear()
            return text

    def kill(self) -> None:
        kill_sandbox(self._proc, self._uid)

    def close(self, grace_s: float = 0.0) -> int | None:
        """Kill the sandbox (after `grace_s` to exit by itself) and reap it; return its exit code."""
        self._timer.cancel()
        if grace_s > 0:
            try:
                self._proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        for f in (self._proc.stdin,) if self._proc.stdin is not None else ():
            try:
                f.close()
            except OSError:
                pass
        code = self._proc.wait()
        self._reader.join(timeout=5)
        self._proc.stdout.close()
        if self._on_close is not None:
            callback, self._on_close = self._on_close, None
            callback()
        return code

    def __enter__(self) -> SandboxProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
