"""One loopback-only network namespace per episode, with listeners the host owns inside it.

A real agent program (Aider, mini-swe-agent ...) must reach exactly one thing over the network:
its episode's model gateway. Every sandboxed command normally gets a fresh, empty network
namespace (sandbox_cmdline.py); with `network=` it joins the episode's instead:

    net = EpisodeNetwork()                        # needs root (CAP_SYS_ADMIN)
    listener = net.listen()                       # socket.socket on 127.0.0.1:<free port>, in the netns
    port = listener.getsockname()[1]              # serve HTTP on it from any host thread
    sandbox.run("curl http://127.0.0.1:%d/" % port, ws, network=net)
    sandbox.spawn(argv, ws, network=net)          # the program, and every shell command of the episode
    net.close()                                   # nothing to reap: no process was started

How, and why this way:
- No helper process. A short-lived host thread calls `unshare(CLONE_NEWNET)` (namespaces of
  the network kind belong to one thread, not to the whole process), sets `lo` up with an ioctl,
  and opens `/proc/thread-self/ns/net`; the thread then ends, and that file descriptor, held by
  this object, is what keeps the namespace alive. Nothing can be orphaned; `close()` drops the
  descriptor, and the namespace disappears once the last socket in it is closed.
- `listen()` runs another short-lived thread that `setns()`es into the namespace (through libc:
  Python 3.11 has no `os.setns`), creates, binds and listens, and ends. A socket belongs for life
  to the namespace it was created in, whatever thread later accepts on it: the gateway serves it
  from ordinary host threads. The socket lives in the host process, so nothing in the sandbox can
  kill it; its port cannot be taken over either (the host's socket does not set SO_REUSEPORT, and
  a second listener on the same address is refused; the sandbox's uid differs from ours anyway).
- Joining: the sandbox chain enters the namespace as root with `nsenter --net=<this fd through
  /proc/<host pid>/fd/N>` (the same nsenter that drops to the workspace uid), and bwrap gets
  `--share-net`; every other confinement (user, pid, mount, ipc, uts, cgroup namespaces, seccomp,
  no capabilities, limits) is unchanged. Inside, the agent has no capability over this namespace
  (it is owned by the host's user namespace) and seccomp refuses `setns`/`unshare`, so it can
  neither reconfigure `lo` nor leave. There is only `lo`: no route to the host's 127.0.0.1, to
  another episode's namespace, or to any other address. Abstract Unix sockets are per network
  namespace too, so the host's (and other episodes') are out of reach.
- Without root there is no way to create a namespace the host can also enter from a threaded
  process, so `EpisodeNetwork()` raises `NetworkUnavailable`. (The weaker fallback, a
  per-episode Unix socket with a forwarder inside the sandbox, is not built.)
- Not picklable: the namespace lives in this process; create it where the sandbox runs.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import threading
from collections.abc import Callable
from typing import TypeVar

CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1

T = TypeVar("T")


class NetworkUnavailable(RuntimeError):
    """A per-episode network namespace cannot be made here (not root, or the kernel refuses)."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _in_thread(fn: Callable[[], T]) -> T:
    """Run `fn` in a fresh OS thread and return its result (or raise its exception): whatever
    namespace the thread enters ends with it, the calling thread never moves."""
    box: dict[str, object] = {}

    def body() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller
            box["error"] = err

    t = threading.Thread(target=body, name="harnessrl-netns", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def _new_namespace(low_ports: bool = False) -> int:
    """(in a throwaway thread) a new network namespace with `lo` up; returns an fd on it.
    `low_ports`: any uid may listen on a port below 1024 in it (a task image's server on port 80
    runs as the image's root, which has no capability on the host's side)."""
    if _libc().unshare(CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise NetworkUnavailable(f"unshare(CLONE_NEWNET) failed: {os.strerror(err)} (needs root)")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack_from("16sh", fcntl.ioctl(s, _SIOCGIFFLAGS, struct.pack("16sh", b"lo", 0)))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | _IFF_UP))
    if low_ports:  # a per-namespace sysctl: /proc/sys/net is this thread's namespace's
        with open("/proc/sys/net/ipv4/ip_unprivileged_port_start", "w") as f:
            f.write("0")
    return os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)


class EpisodeNetwork:
    """A loopback-only network namespace for one episode (module docstring). Thread-safe."""

    def __init__(self, low_ports: bool = False) -> None:
        if os.geteuid() != 0:
            raise NetworkUnavailable(
                "a per-episode network namespace needs root (CAP_SYS_ADMIN); run harnessrl as root, "
                "or run agent programs without one (they then have no network at all)")
        self._fd: int | None = _in_thread(lambda: _new_namespace(low_ports))
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._fd is None

    @property
    def path(self) -> str:
        """A path naming the namespace for `nsenter --net=` (valid in this process's children)."""
        if self._fd is None:
            raise NetworkUnavailable("the episode network is closed")
        return f"/proc/{os.getpid()}/fd/{self._fd}"

    def inode(self) -> int:
        """The namespace's inode number (what `readlink /proc/self/ns/net` shows inside)."""
        if self._fd is None:
            raise NetworkUnavailable("the episode network is closed")
        return os.fstat(self._fd).st_ino

    def listen(self, port: int = 0, backlog: int = 64) -> socket.socket:
        """A TCP socket bound to 127.0.0.1:`port` (0: any free one) and listening, created inside
        the namespace. The caller owns it (close it when done); serve it from any thread."""
        with self._lock:
            if self._fd is None:
                raise NetworkUnavailable("the episode network is closed")
            fd = self._fd

            def make() -> socket.socket:
                if _libc().setns(fd, CLONE_NEWNET) != 0:
                    raise NetworkUnavailable(f"setns into the episode network failed: {os.strerror(ctypes.get_errno())}")
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    s.bind(("127.0.0.1", port))
                    s.listen(backlog)
                except BaseException:
                    s.close()
                    raise
                return s

            return _in_thread(make)

    def listening(self) -> set[int]:
        """The TCP ports something listens on inside the namespace (IPv4 and IPv6)."""
        with self._lock:
            if self._fd is None:
                raise NetworkUnavailable("the episode network is closed")
            fd = self._fd

            def read() -> set[int]:
                if _libc().setns(fd, CLONE_NEWNET) != 0:
                    raise NetworkUnavailable(f"setns into the episode network failed: {os.strerror(ctypes.get_errno())}")
                ports = set()
                for name in ("tcp", "tcp6"):
                    try:
                        lines = open(f"/proc/thread-self/net/{name}").read().splitlines()[1:]
                    except OSError:
                        continue
                    for line in lines:
                        fields = line.split()
                        if len(fields) > 3 and fields[3] == "0A":  # TCP_LISTEN
                            ports.add(int(fields[1].rsplit(":", 1)[1], 16))
                return ports

            return _in_thread(read)

    def close(self) -> None:
        """Drop the namespace (it ends when the last socket in it closes). Idempotent."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __getstate__(self) -> dict:
        raise TypeError("EpisodeNetwork lives in its process; create it where the sandbox runs")

    def __enter__(self) -> EpisodeNetwork:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


__all__ = ["EpisodeNetwork", "NetworkUnavailable"]
