"""One cgroup sub-tree per episode: the SUM of its processes' memory and tasks is bounded, and
every process it ever started can be listed and killed at once.

RLIMIT_AS and RLIMIT_NPROC (process.py) bound one process, or one uid; five processes of 400 MB
each still fit under a 512 MB per-process limit. A cgroup bounds what they hold together.

Which cgroup file system is used, in order:

- cgroup v2 with the `memory` and `pids` controllers delegated to our own cgroup (a unified
  machine whose service manager delegates, or a container root): `memory.max`, `memory.swap.max`,
  `pids.max`, and `cgroup.kill` to end the episode.
- the v1 `memory` and `pids` hierarchies (hybrid machines, like the development VM):
  `memory.limit_in_bytes` (+ `memsw`), `pids.max`. The pids cgroup also tracks every process of
  the episode, and `kill` empties it with `pids.max` at 0 first, so that no fork can slip past.
  The v2 unified tree is then left alone: see "Joining" below for why.
- the v2 unified tree without controllers (hybrid machine without the v1 ones): processes are
  tracked and killed with `cgroup.kill`, not bounded.
- neither writable (not root, no delegation): `EpisodeCgroup.create` returns None and the
  per-process rlimits are all that bounds an episode; `reason()` says why, and the sandbox logs
  it once. Grading still kills the agent's processes by uid (grader.py).

Joining: each sandboxed command is started by a `/bin/sh` prefix in the sandbox command line
(run as root) that writes `0` (itself) to each of `join_files` before it execs the rest; everything
it forks stays inside. Neither the agent nor the grader can leave: /sys is not mounted in the
sandbox, and cgroup files are root's. Which file is written matters for speed: a write to
`cgroup.procs` moves a whole thread group and so takes the kernel's global threadgroup lock for
writing, which waits for an RCU grace period (measured: 10-12 ms per command on the development
VM, most of the sandbox's overhead). A write of `0` to a v1 `tasks` file moves only the writing
thread and skips that lock (kernel >= 6.0); the shell is single-threaded, so that thread is the
whole process. Hence v1 hierarchies join through `tasks`, and v2 (which moves only whole
processes across domains) through `cgroup.procs`: a pure v2 machine pays the grace period unless
its cgroup2 mount has `favordynmods` (docs/security.md).

Leftovers: a run killed with SIGKILL never removes its episodes' cgroups, so each name carries its
owner, `harnessrl-<name>-by-<pidns>-<pid>-<start>` (the creating process's pid namespace, pid and
start time: a recycled pid is not mistaken for the owner). `cleanup_stale()`, called by the
workspace reaper at the next start, kills what is left in the cgroups of owners that are gone and
removes them; an owner in another pid namespace (another container sharing the hierarchy) cannot
be judged from here and is left alone, and so are names without an owner (older versions).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)
PREFIX = "harnessrl-"
_OWNED = re.compile(re.escape(PREFIX) + r"(?P<name>.+)-by-(?P<ns>\d+)-(?P<pid>\d+)-(?P<start>\d+)")


def _pid_ns() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat); None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _owner_tag() -> str:
    return f"{_pid_ns()}-{os.getpid()}-{_start_time(os.getpid()) or 0}"


@dataclass(frozen=True)
class _Mount:
    kind: str  # "v2" | "memory" | "pids"
    path: Path  # our own cgroup in that hierarchy


def _own_cgroups() -> list[_Mount]:
    """Our cgroup's directory in each hierarchy we can use, from mountinfo and /proc/self/cgroup."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mountinfo = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    paths: dict[str, str] = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else ["v2"]:
            paths[c] = path
    out = []
    for line in mountinfo:
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3:
            continue
        root, mountpoint, fstype, opts = fields[3], fields[4], rfields[0], rfields[2].split(",")
        kinds = ["v2"] if fstype == "cgroup2" else [k for k in ("memory", "pids") if k in opts] if fstype == "cgroup" else []
        for kind in kinds:
            path = paths.get(kind)
            if path is None or not path.startswith(root):
                continue
            out.append(_Mount(kind, Path(mountpoint) / path[len(root):].lstrip("/")))
    return out


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        return False


class EpisodeCgroup:
    """The cgroup directories of one episode (one per hierarchy in use)."""

    def __init__(self, dirs: list[Path], limited: bool):
        self.dirs = dirs
        self.limited = limited  # memory and pids limits are in force (not only tracking)

    _reason = ""

    @classmethod
    def reason(cls) -> str:
        return cls._reason

    @classmethod
    def create(cls, name: str, memory_mb: int, pids: int) -> EpisodeCgroup | None:
        if os.geteuid() != 0:
            cls._reason = "not root: no per-episode cgroup; only per-process limits apply"
            return None
        mounts = _own_cgroups()
        v2 = next((m for m in mounts if m.kind == "v2"), None)
        name = f"{name}-by-{_owner_tag()}"  # the reaper tells a dead owner's leftovers by this (module docstring)
        dirs: list[Path] = []
        limited = False
        if v2 is not None and {"memory", "pids"} <= set(_controllers(v2.path / "cgroup.subtree_control")):
            d = v2.path / f"{PREFIX}{name}"
            if _mkdir(d) and _write(d / "memory.max", str(memory_mb << 20)) and _write(d / "pids.max", str(pids)):
                _write(d / "memory.swap.max", "0")
                return cls([d], True)
            _rmdir(d)
        mem = next((m for m in mounts if m.kind == "memory"), None)
        pid = next((m for m in mounts if m.kind == "pids"), None)
        if mem is not None and pid is not None:
            dm, dp = mem.path / f"{PREFIX}{name}", pid.path / f"{PREFIX}{name}"
            if (_mkdir(dm) and _mkdir(dp) and _write(dm / "memory.limit_in_bytes", str(memory_mb << 20))
                    and _write(dp / "pids.max", str(pids))):
                _write(dm / "memory.memsw.limit_in_bytes", str(memory_mb << 20))  # no swap beyond it
                dirs, limited = [dm, dp], True
            else:
                _rmdir(dm), _rmdir(dp)
        if v2 is not None and not limited:  # tracking and cgroup.kill where v1 pids cannot track
            d = v2.path / f"{PREFIX}{name}"
            if _mkdir(d):
                dirs.append(d)
        if not dirs:
            cls._reason = "no writable cgroup hierarchy: only per-process limits apply"
            return None
        if not limited:
            cls._reason = "memory/pids controllers not available to us: processes tracked, not bounded"
        return cls(dirs, limited)

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    @property
    def join_files(self) -> list[str]:
        """Where a single-threaded process writes `0` to join the episode (module docstring):
        a v1 hierarchy's `tasks`, without the global lock; v2's `cgroup.procs`."""
        return [str(d / ("tasks" if self._v1(d) else "cgroup.procs")) for d in self.dirs]

    def pids(self) -> set[int]:
        out: set[int] = set()
        for d in self.dirs:
            try:
                out |= {int(x) for x in (d / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                pass
        return out

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer ended in this episode so far."""
        for d in self.dirs:
            for name in ("memory.events", "memory.oom_control"):
                try:
                    for line in (d / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill":
                            return int(value)
                except (OSError, ValueError):
                    continue
        return 0

    def kill(self, timeout_s: float = 5.0) -> bool:
        """SIGKILL every process in the episode; True when none is left."""
        deadline = time.monotonic() + timeout_s
        # v1 pids: no fork succeeds while the limit is 0, so each pass can only shrink the set
        frozen = {d: _read(d / "pids.max") for d in self.dirs if self._v1(d) and (d / "pids.max").exists()}
        for d in frozen:
            _write(d / "pids.max", "0")
        try:
            while True:
                for d in self.dirs:
                    if (d / "cgroup.kill").exists():
                        _write(d / "cgroup.kill", "1")  # atomic: a fork in flight is caught too
                left = self.pids()
                for p in left:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                if not left:
                    return True
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.01)
        finally:
            for d, value in frozen.items():  # the episode may go on (a reset): its limit comes back
                if value:
                    _write(d / "pids.max", value)

    @staticmethod
    def _v1(d: Path) -> bool:
        return not (d / "cgroup.type").exists()  # every non-root v2 cgroup has cgroup.type

    def remove(self) -> None:
        self.kill()
        for d in self.dirs:
            _rmdir(d)


def cleanup_stale() -> int:
    """Kill what is left in the episode cgroups of owners that died (kill -9 of an eval or a training
    run) and remove those cgroups; a live owner's are never touched. Returns how many were removed."""
    if os.geteuid() != 0:
        return 0
    ns = _pid_ns()
    stale: dict[str, list[Path]] = {}  # one episode's directories across the hierarchies
    for mount in _own_cgroups():
        try:
            entries = list(mount.path.iterdir())
        except OSError:
            continue
        for d in entries:
            m = _OWNED.fullmatch(d.name)
            if m is None or int(m["ns"]) != ns or not d.is_dir():
                continue
            now = _start_time(int(m["pid"]))
            # gone, or its pid now names another process (start 0: the owner could not read its own; pid only)
            if now is None or (int(m["start"]) and now != int(m["start"])):
                stale.setdefault(d.name, []).append(d)
    removed = 0
    for dirs in stale.values():
        EpisodeCgroup(dirs, limited=False).remove()  # pids.max 0 first on v1, so no leftover can fork past
        removed += not any(d.exists() for d in dirs)
    if removed:
        log.info("removed %d episode cgroup(s) of dead runs", removed)
    return removed


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _controllers(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def _mkdir(d: Path) -> bool:
    try:
        d.mkdir(exist_ok=True)
        return True
    except OSError as err:
        log.debug("cannot create cgroup %s: %s", d, err)
        return False


def _rmdir(d: Path) -> None:
    for _ in range(50):  # the kernel removes a dead cgroup's last task asynchronously
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


__all__ = ["EpisodeCgroup", "cleanup_stale"]
