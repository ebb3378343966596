"""The rootless episode network: a per-episode Unix socket and a forwarder inside the sandbox.

    net = open_network("auto", workspace)     # EpisodeNetwork as root, UnixNetwork otherwise
    gateway = Gateway(..., sock=net.listen(), url=net.base_url)
    sandbox.spawn(argv, ws, network=net)     # the program runs under the forwarder (unix_forward.py)

Modes (`options.network` of a program harness):
  netns  the episode's own loopback-only network namespace (netns.py): needs root.
  unix   this module: works without root.
  auto   netns as root, unix otherwise.

How `unix` works: the host's gateway listens on a Unix socket in a folder private to the
episode (the workspace's `private/gateway`), which is bound read-only into the program's
sandbox at /run/harnessrl-gateway. The program's sandbox gets a fresh, empty network namespace
(only `lo`), as every sandboxed command does; inside it the forwarder listens on 127.0.0.1:PORT
and relays to the socket, and the program (its child) is told OPENAI_BASE_URL=http://127.0.0.1:PORT/v1.
So the program, and the shell commands it runs, reach that socket and nothing else: no host
loopback port, no other episode's gateway (another episode's socket is in a folder this
sandbox does not have), no other address.

Why it is weaker than `netns`: the forwarder runs inside the sandbox as the program's own user,
so the program can kill it or put its own listener on the port (it still reaches only its own
gateway, and the gateway still checks the episode's key); and the socket is a file on the host,
which any host process of the same user can connect to (it still needs the key). With `netns`
the listener is a host-owned socket the program can neither kill nor replace, and nothing on
the host's side of the namespace boundary is reachable at all. The forwarder also needs a
`python3` inside the sandbox (every installed program brings one).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
from pathlib import Path
from typing import Any

from harnessrl.config import ConfigError
from harnessrl.tasks.netns import EpisodeNetwork
from harnessrl.tasks.sandbox_cmdline import Bind

MODES = ("auto", "netns", "unix")
MOUNT = "/run/harnessrl-gateway"
_FORWARDER = Path(__file__).with_name("unix_forward.py")


def network_mode(value: Any) -> str:
    """`options.network` resolved to netns or unix; a one-line error naming the option otherwise."""
    mode = str(value or "auto")
    if mode not in MODES:
        raise ConfigError(f"options.network={value!r}: choose auto, netns (needs root) or unix")
    if mode == "auto":
        return "netns" if os.geteuid() == 0 else "unix"
    return mode


def open_network(mode: Any, workspace: Any) -> EpisodeNetwork | UnixNetwork:
    """The episode network `options.network` asks for (module docstring)."""
    return EpisodeNetwork() if network_mode(mode) == "netns" else UnixNetwork(workspace.private_dir("gateway"))


class UnixNetwork:
    """One episode's Unix-socket gateway endpoint and the forwarder that serves it in the sandbox."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.socket_path = self.folder / "gateway.sock"
        if len(str(self.socket_path).encode()) > 107:  # sun_path holds 108 bytes, the NUL included
            raise ConfigError(f"the episode folder {self.folder} is too deep for a Unix socket path; use a shorter "
                              "workspace root")
        shutil.copyfile(_FORWARDER, self.folder / "forward.py")
        (self.folder / "forward.py").chmod(0o644)
        self.folder.chmod(0o755)  # the sandbox's user reads the forwarder and connects; the mount is read-only
        # a port of the sandbox's own namespace: any is free there; random so nothing can count on one
        self.port = 20000 + secrets.randbelow(40000)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def closed(self) -> bool:
        """True before `listen` and after `close`: there is no socket to forward to."""
        return not self.socket_path.exists()

    def listen(self, backlog: int = 64) -> socket.socket:
        """The gateway's listening Unix socket (the caller serves and closes it)."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.bind(str(self.socket_path))
            self.socket_path.chmod(0o666)  # connecting needs write permission; only this episode's sandbox sees it
            s.listen(backlog)
        except BaseException:
            s.close()
            raise
        return s

    def bind(self) -> Bind:
        return Bind(self.folder, MOUNT, writable=False)

    def wrap(self, command: str | list[str]) -> list[str]:
        """`command` run as the forwarder's child (a string is a bash script, as for `Sandbox.run`)."""
        argv = ["bash", "-c", command] if isinstance(command, str) else list(command)
        return ["python3", f"{MOUNT}/forward.py", str(self.port), f"{MOUNT}/gateway.sock", "--", *argv]

    def close(self) -> None:
        """Remove the socket file (the gateway closes its socket itself). Idempotent."""
        try:
            self.socket_path.unlink()
        except FileNotFoundError:
            pass

    def __enter__(self) -> UnixNetwork:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["MODES", "UnixNetwork", "network_mode", "open_network"]
