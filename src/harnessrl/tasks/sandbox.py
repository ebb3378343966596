"""The bubblewrap sandbox: every command an agent issues, and every test run, goes through here.

One call = one fresh sandbox around one `Workspace` (bound read-write at `/app`):

    sandbox = Sandbox(Limits(timeout_s=30))
    result = sandbox.run("python -m pytest -q", ws)        # SandboxResult
    result.status, result.exit_code, result.stdout, result.stderr, result.wall_time

    with sandbox.spawn(["bash"], ws) as proc:              # long-lived: SandboxProcess
        proc.write("echo hi\\n"); proc.read(timeout=1.0)

    sandbox.run(cmd, ws, network=net)                      # join the episode's netns (netns.py)
    sandbox.spawn(argv, ws, network=unix_net)              # rootless: under a forwarder (unix_net.py)

How a command is confined (user namespace, dropped root and capabilities, seccomp, the
episode's cgroup, private /tmp, no network, hidden paths) is sandbox_cmdline.py, which builds
the command line; process.py runs it; docs/security.md has the threat model.

Statuses: `ok` (ran to completion, whatever the exit code), `timeout` (wall clock, or the CPU
limit: killed by SIGXCPU), `oom` (the address-space limit: MemoryError / ENOMEM / bad_alloc on
stderr — a heuristic, RLIMIT_AS has no signal of its own; or the episode cgroup's OOM killer
ended a process during the call), `output_truncated` (stdout+stderr
exceeded `Limits.output_bytes`; the command is killed and what came first is kept), `killed`
(ended by a signal, e.g. SIGXFSZ at the file-size limit), `sandbox_error` (bwrap could not set
up, or a requested path does not exist).

Without bwrap, `Sandbox()` raises `SandboxUnavailable`; `Sandbox(unsafe=True)` (or
HARNESSRL_UNSAFE_SANDBOX=1) runs commands as plain subprocesses in the workspace directory with
the limits but NO isolation, after a loud warning.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from harnessrl.tasks.process import (
    STATUSES,
    Limits,
    SandboxProcess,
    SandboxResult,
    classify_exit,
    communicate,
    read_all,
)
from harnessrl.tasks.cgroup import EpisodeCgroup
from harnessrl.tasks.netns import EpisodeNetwork, NetworkUnavailable
from harnessrl.tasks.sandbox_cmdline import (
    Bind,
    bwrap_args,
    cgroup_join,
    count_processes,
    drop_root,
    image_bwrap_args,
    inner_command,
    unsafe_argv,
)
from harnessrl.tasks.seccomp import filter_bpf, filter_fd
from harnessrl.tasks.staging import PythonTreeStage, SandboxUnavailable
from harnessrl.tasks.unix_net import UnixNetwork
from harnessrl.tasks.workspace import APP, Workspace, remove_call_dir

log = logging.getLogger(__name__)

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # src/harnessrl: holds built-in suites' hidden tests


class UnsafeSandboxWarning(UserWarning):
    """Commands run WITHOUT isolation."""


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def default_python_paths() -> list[Path]:
    """The interpreter trees a sandboxed `python` needs: the venv and the base installation."""
    roots = {Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parents[1]}
    out = []
    for r in sorted(roots, key=lambda p: len(str(p))):
        r = Path(os.path.abspath(r))
        if str(r).startswith("/usr/") or r == Path("/usr") or any(r.is_relative_to(o) for o in out):
            continue
        out.append(r)
    return out


class Sandbox:
    """Runs commands in bubblewrap around a Workspace. Safe to share between threads."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        unsafe: bool | None = None,
        python_paths: Sequence[str | Path] | None = None,
        ro_paths: Sequence[str | Path] = (),
        hidden: Sequence[str | Path] = (),
        env: Mapping[str, str] | None = None,
        bwrap: str | None = None,
        state_dir: str | Path | None = None,
        seccomp: bool = True,
    ):
        self.limits = limits or Limits()
        self.unsafe = os.environ.get("HARNESSRL_UNSAFE_SANDBOX", "").lower() in ("1", "true", "yes") if unsafe is None else unsafe
        self.bwrap = bwrap if bwrap is not None else bwrap_path()
        if not self.bwrap or not Path(self.bwrap).exists() or not os.access(self.bwrap, os.X_OK):
            if not self.unsafe:
                raise SandboxUnavailable(
                    "bubblewrap (bwrap) is not installed, so agent commands cannot be isolated. Install it "
                    "(Debian/Ubuntu: apt-get install bubblewrap), or opt into running agent code WITHOUT "
                    "isolation with Sandbox(unsafe=True) / HARNESSRL_UNSAFE_SANDBOX=1."
                )
            self.bwrap = None
        if self.unsafe:
            msg = (
                "UNSAFE SANDBOX: agent commands run as plain subprocesses with resource limits but NO "
                "filesystem, network or process isolation. Use only with code you trust."
            )
            warnings.warn(msg, UnsafeSandboxWarning, stacklevel=2)
            log.warning(msg)
        self.root = os.geteuid() == 0
        # The syscall filter (seccomp.py) for every sandboxed process; compiled once, here.
        self.seccomp_bpf = filter_bpf() if self.bwrap and seccomp else None
        if self.bwrap and seccomp and self.seccomp_bpf is None:
            msg = ("no seccomp filter: libseccomp's Python bindings are missing (Debian: apt-get install "
                   "python3-seccomp, or run scripts/setup-system.sh); ptrace, pidfd_getfd, io_uring ... stay "
                   "callable inside the sandbox")
            warnings.warn(msg, UnsafeSandboxWarning, stacklevel=2)
            log.warning(msg)
        paths = default_python_paths() if python_paths is None else [Path(p) for p in python_paths]
        self.ro_paths = [Path(os.path.abspath(p)) for p in [*paths, *ro_paths]]
        self.hidden = [Path(os.path.abspath(p)) for p in [_PACKAGE_DIR, *hidden]]
        self.env = {
            "PATH": ":".join([*(f"{p}/bin" for p in paths), "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": "/tmp",
            "USER": "agent",
            "LOGNAME": "agent",
            "EMAIL": "agent@harnessrl.invalid",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TERM": "xterm-256color",
            "SHELL": "/bin/bash",
            "TMPDIR": "/tmp",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        # Trees the workspace uid cannot read are seen through a private mount namespace (staging.py).
        self._stage = PythonTreeStage(self.ro_paths if self.bwrap and self.root else [], state_dir)
        # One cgroup per workspace (cgroup.py): the sum of an episode's processes is bounded.
        self._cgroups: dict[str, EpisodeCgroup | None] = {}
        # Episodes that run in a task image (tasks/images/rootfs.py): workspace home -> its root.
        self._images: dict[str, object] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:  # picklable for process pools and Ray: helpers stay behind
        state = self.__dict__.copy()
        state["_lock"], state["_cgroups"], state["_images"] = None, {}, {}
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def cgroup(self, ws: Workspace) -> EpisodeCgroup | None:
        """The episode's cgroup (created at its first command; None where the machine has none)."""
        if not self.root or self.bwrap is None:
            return None
        key = str(ws.home)
        with self._lock:
            if key not in self._cgroups:
                cg = EpisodeCgroup.create(str(ws.uid), self.limits.episode_memory_mb, self.limits.nproc)
                if cg is None or not cg.limited:
                    if not getattr(Sandbox, "_cgroup_logged", False):
                        Sandbox._cgroup_logged = True
                        log.warning("episode limits: %s", EpisodeCgroup.reason())
                self._cgroups[key] = cg
                if cg is not None:
                    ws.on_close(functools.partial(_remove_cgroup, self._cgroups, key))
            return self._cgroups[key]

    def attach_image(self, ws: Workspace, root) -> None:
        """Run every later command of `ws` in a task image's episode root (an `EpisodeRoot`: its
        `merged` folder becomes /, its ENV the environment). Detached when the workspace closes."""
        key = str(ws.home)
        with self._lock:
            self._images[key] = root
        ws.on_close(functools.partial(self._images.pop, key, None))

    def image_root(self, ws: Workspace):
        return self._images.get(str(ws.home))

    def hide(self, *paths: str | Path) -> None:
        """Never show these host paths (e.g. a suite's folder) even if they lie in a bound tree."""
        for p in paths:
            p = Path(os.path.abspath(p))
            if p not in self.hidden:
                self.hidden.append(p)

    # -- building the command line -------------------------------------------------------

    def _argv(self, command: str | Sequence[str], ws: Workspace, limits: Limits, binds: Sequence[Bind],
              env: Mapping[str, str], cwd: str, status_fd: int | None, seccomp_fd: int | None = None,
              call_dir: Path | None = None, exec_init: bool = False,
              netns: str | None = None) -> list[str]:
        nproc = limits.nproc
        if not self.root:  # NPROC counts all of this user's processes, not just the sandbox's
            nproc += count_processes(os.getuid())
        if self.bwrap is None:
            return [*(["nsenter", f"--net={netns}", "--"] if netns else []), *unsafe_argv(command, limits, nproc)]
        fds = [*(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []),
               *(["--json-status-fd", str(status_fd)] if status_fd is not None else [])]
        image = self._images.get(str(ws.home))
        if image is not None:  # the task image's root instead of the host's /usr and /etc; nothing staged
            image_env = {k: v for k, v in self.env.items() if k not in ("PATH", "HOME", "USER", "LOGNAME")}
            image_env |= {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
                          "USER": "root", "LOGNAME": "root"} | image.env | dict(env)
            argv = image_bwrap_args(self.bwrap, image.merged, limits, [*getattr(image, "binds", ()), *binds], image_env,
                                    cwd, call_dir, fds, share_net=netns is not None)
            argv += ["--", *inner_command(command, limits, nproc, exec_init, getattr(image, "shell", None))]
            argv = [*drop_root(ws, None, netns), *argv]
            cg = self.cgroup(ws)
            return [*cgroup_join(cg.join_files), *argv] if cg is not None else argv
        argv = bwrap_args(self.bwrap, ws, limits, self.ro_paths, self.hidden, dict(self._stage.staged), binds,
                          {**self.env, **env}, cwd, call_dir, fds, share_net=netns is not None)
        argv += ["--", *inner_command(command, limits, nproc, exec_init)]
        if self.root:  # the staging namespace (when a tree needs it) and the uid drop, in one exec
            argv = [*drop_root(ws, self._stage.holder(ws) if self._stage.staged else None, netns), *argv]
        cg = self.cgroup(ws)
        if cg is not None:  # join the episode's cgroup(s) as root, then exec the chain; never run outside
            argv = [*cgroup_join(cg.join_files), *argv]
        return argv

    def _netns(self, network: EpisodeNetwork | None) -> str | None:
        """The `nsenter --net=` path of an episode network, checked before anything is opened."""
        if network is None:
            return None
        if not self.root:
            raise NetworkUnavailable("joining an episode network needs root")
        return network.path  # raises when closed

    def _unix(self, net: UnixNetwork, command: str | Sequence[str], binds: Sequence[Bind]):
        """A command of a rootless episode network: under the forwarder, with the gateway folder bound."""
        if self.bwrap is None:
            raise NetworkUnavailable("an episode network needs the bubblewrap sandbox (not the unsafe mode)")
        if net.closed:
            raise NetworkUnavailable("the episode network is closed")
        return net.wrap(command if isinstance(command, str) else list(command)), [*binds, net.bind()], None

    def _open_call(self, ws: Workspace) -> tuple[int | None, Path | None]:
        """Per-call resources: a seccomp program fd and the call's /tmp and /dev/shm dirs."""
        fd = filter_fd(self.seccomp_bpf) if self.seccomp_bpf else None
        return fd, (ws.call_dirs() if self.bwrap is not None else None)

    # -- one command ---------------------------------------------------------------------

    def run(
        self,
        command: str | Sequence[str],
        workspace: Workspace,
        *,
        timeout_s: float | None = None,
        stdin: str | bytes | None = None,
        env: Mapping[str, str] | None = None,
        binds: Sequence[Bind] = (),
        cwd: str = APP,
        limits: Limits | None = None,
        pass_fds: Sequence[int] = (),
        exec_init: bool = False,
        network: EpisodeNetwork | UnixNetwork | None = None,
    ) -> SandboxResult:
        """Run `command` (a bash script string, or an argv list) in a fresh sandbox; never raises
        for anything the command does. `pass_fds` reach the command; `exec_init` (argv commands)
        makes the command itself the sandbox's pid 1, which must then reap orphans (the grader's
        init does, so that no shell holding the report fd stays around). `network`: the command
        joins that episode network namespace (netns.py) instead of a new empty one; raises
        `NetworkUnavailable` when it is closed. A `UnixNetwork` (unix_net.py, the rootless mode):
        the command runs under its forwarder, in a fresh namespace of its own."""
        if isinstance(network, UnixNetwork):
            command, binds, network = self._unix(network, command, binds)
        netns = self._netns(network)
        limits = limits or self.limits
        if timeout_s is not None:
            limits = replace(limits, timeout_s=timeout_s)
        missing = [str(b.source) for b in binds if not Path(b.source).exists()]
        if missing:
            return SandboxResult("sandbox_error", None, "", "", 0.0, detail=f"bind source missing: {missing}")
        status_r, status_w = os.pipe() if self.bwrap else (None, None)
        seccomp_fd, call_dir = self._open_call(workspace)
        cg = self.cgroup(workspace)
        ooms = cg.oom_kills() if cg is not None else 0
        t0 = time.perf_counter()
        try:
            argv = self._argv(command, workspace, limits, binds, env or {}, cwd, status_w, seccomp_fd, call_dir,
                              exec_init and not isinstance(command, str), netns)
            keep = [fd for fd in (status_w, seccomp_fd, *pass_fds) if fd is not None]
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True, pass_fds=keep,
                cwd=str(workspace.root) if self.bwrap is None else "/", env=self._host_env(),
            )
        except OSError as err:
            for fd in (status_r, status_w, seccomp_fd):
                if fd is not None:
                    os.close(fd)
            if call_dir is not None:
                remove_call_dir(call_dir)
            return SandboxResult("sandbox_error", None, "", "", time.perf_counter() - t0, detail=f"cannot start: {err}")
        for fd in (status_w, seccomp_fd):
            if fd is not None:
                os.close(fd)
        try:
            data = stdin.encode() if isinstance(stdin, str) else stdin
            out, err, timed_out, truncated = communicate(proc, data, limits.timeout_s, limits.output_bytes, workspace.uid)
            wall = time.perf_counter() - t0
            status_json = read_all(status_r) if status_r is not None else b""
        finally:
            if call_dir is not None:
                remove_call_dir(call_dir)
        result = classify_exit(proc.returncode, out, err, wall, timed_out, truncated, status_json,
                               self.bwrap is not None, limits)
        if cg is not None and cg.limited and cg.oom_kills() > ooms and result.status in ("ok", "killed"):
            result = replace(result, status="oom",
                             detail=f"episode memory limit of {self.limits.episode_memory_mb} MB (all processes together)")
        return result

    def _host_env(self) -> dict[str, str]:
        # The chain (nsenter/setpriv/bwrap, or prlimit when unsafe) needs a PATH; bwrap --clearenv drops it.
        return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **({k: v for k, v in self.env.items()} if self.bwrap is None else {})}

    # -- long-lived processes -----------------------------------------------------------------

    def spawn(
        self,
        command: str | Sequence[str],
        workspace: Workspace,
        *,
        lifetime_s: float = 3600.0,
        env: Mapping[str, str] | None = None,
        binds: Sequence[Bind] = (),
        cwd: str = APP,
        limits: Limits | None = None,
        buffer_bytes: int = 1_000_000,
        network: EpisodeNetwork | UnixNetwork | None = None,
        stdin: bool = True,
    ) -> SandboxProcess:
        """Start a long-lived sandboxed process with a stdin pipe and merged stdout/stderr.

        CPU time is limited to `lifetime_s` per process; the sandbox is killed after
        `lifetime_s` wall seconds or at `close()`. `network` as in `run`. `stdin=False`: the
        process reads /dev/null (a non-interactive program; `write` then raises).
        """
        if isinstance(network, UnixNetwork):
            command, binds, network = self._unix(network, command, binds)
        netns = self._netns(network)
        limits = replace(limits or self.limits, timeout_s=lifetime_s, cpu_s=max(1, int(lifetime_s)))
        seccomp_fd, call_dir = self._open_call(workspace)
        cleanup = functools.partial(remove_call_dir, call_dir) if call_dir is not None else None
        try:
            argv = self._argv(command, workspace, limits, binds, env or {}, cwd, None, seccomp_fd, call_dir,
                              netns=netns)
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True, pass_fds=[seccomp_fd] if seccomp_fd is not None else (),
                cwd=str(workspace.root) if self.bwrap is None else "/", env=self._host_env(),
            )
        except BaseException:
            if cleanup is not None:
                cleanup()
            raise
        finally:
            if seccomp_fd is not None:
                os.close(seccomp_fd)
        return SandboxProcess(proc, lifetime_s, buffer_bytes, workspace.uid, on_close=cleanup)


def _remove_cgroup(cgroups: dict[str, EpisodeCgroup | None], key: str) -> None:
    cg = cgroups.pop(key, None)
    if cg is not None:
        cg.remove()


__all__ = ["STATUSES", "Bind", "Limits", "Sandbox", "SandboxProcess", "SandboxResult", "SandboxUnavailable",
           "UnsafeSandboxWarning", "bwrap_path", "default_python_paths"]
