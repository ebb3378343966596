"""The per-episode loopback-only network namespace (tasks/netns.py) with the real sandbox.

What must hold: a command of the episode reaches the episode's listener and nothing else (not a
host listener on 127.0.0.1, not another episode's, no other address); it cannot kill, replace
or reconfigure what the host serves; closing leaves nothing behind.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading

import pytest

from harnessrl.tasks.netns import EpisodeNetwork, NetworkUnavailable

pytestmark = [pytest.mark.sandbox,
              pytest.mark.skipif(os.geteuid() != 0, reason="a per-episode network namespace needs root")]


def probe(host: str, port: int) -> str:
    """A bash line that prints OPEN <host> or CLOSED <host> after trying one TCP connect."""
    return (f"if timeout 3 bash -c 'exec 3<>/dev/tcp/{host}/{port}' 2>/dev/null; "
            f"then echo OPEN {host}; else echo CLOSED {host}; fi")


class Server:
    """Accepts connections on a listener from a host thread; answers each with one line."""

    def __init__(self, listener: socket.socket, reply: bytes = b"gateway\n"):
        self.listener, self.reply, self.accepted = listener, reply, 0
        listener.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            with conn:
                self.accepted += 1
                conn.sendall(self.reply)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.listener.close()


@pytest.fixture
def net():
    with EpisodeNetwork() as n:
        yield n


def test_a_command_in_the_episode_network_reaches_its_listener(sandbox, ws, net):
    server = Server(net.listen())
    port = server.listener.getsockname()[1]
    try:
        r = sandbox.run(f"exec 3<>/dev/tcp/127.0.0.1/{port}; head -n1 <&3; readlink /proc/self/ns/net", ws,
                        network=net)
        assert r.ok, r
        assert r.stdout.splitlines() == ["gateway", f"net:[{net.inode()}]"]
        assert server.accepted == 1
        # a long-lived process (the agent program) joins the same namespace
        with sandbox.spawn(["/bin/bash", "-c", probe("127.0.0.1", port)], ws, network=net, stdin=False) as p:
            assert p.read(timeout=15, until="\n").strip() == "OPEN 127.0.0.1"
        # ...and without `network=` a command gets a fresh empty namespace, where the port is closed
        assert sandbox.run(probe("127.0.0.1", port), ws).stdout.strip() == "CLOSED 127.0.0.1"
    finally:
        server.stop()


def test_host_loopback_other_episodes_and_other_addresses_are_unreachable(sandbox, ws, net):
    mine = Server(net.listen())
    other_net = EpisodeNetwork()
    other = Server(other_net.listen())
    host = Server(socket.create_server(("0.0.0.0", 0)))  # the host's own netns, every address
    host_port = host.listener.getsockname()[1]
    addrs = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True).stdout
    host_ips = [line.split()[3].split("/")[0] for line in addrs.splitlines() if " lo " not in line]
    try:
        script = "; ".join([
            probe("127.0.0.1", host_port),  # a host service on loopback
            probe("127.0.0.1", other.listener.getsockname()[1]),  # another episode's gateway port
            *(probe(ip, host_port) for ip in host_ips),  # the host's other addresses
            probe("10.0.0.1", 80), probe("1.1.1.1", 443),
            "ip -o link show | cut -d: -f2",  # which interfaces exist at all
        ])
        r = sandbox.run(script, ws, network=net, timeout_s=60)
        lines = r.stdout.splitlines()
        assert [ln for ln in lines if ln.startswith("OPEN")] == []
        assert len([ln for ln in lines if ln.startswith("CLOSED")]) == 4 + len(host_ips)
        assert [ln.strip() for ln in lines if not ln.startswith(("OPEN", "CLOSED"))] == ["lo"]
        assert host.accepted == 0 and other.accepted == 0
        # the control: the same probe from the host reaches the host listener
        assert subprocess.run(["bash", "-c", probe("127.0.0.1", host_port)], capture_output=True,
                              text=True).stdout.strip() == "OPEN 127.0.0.1"
    finally:
        for s in (mine, other, host):
            s.stop()
        other_net.close()


def test_the_sandbox_cannot_kill_replace_or_reconfigure_the_listener(sandbox, ws, net):
    server = Server(net.listen())
    port = server.listener.getsockname()[1]
    host_fd_path = f"/proc/{os.getpid()}/fd"
    try:
        attack = "; ".join([
            "kill -9 -1 2>/dev/null",  # everything it can signal
            f"python3 -c \"import socket; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
            f"s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1); s.bind(('127.0.0.1', {port})); s.listen(); "
            f"print('BOUND')\" 2>&1 | tail -n1",  # take the gateway's port over
            "ip link set lo down 2>&1; echo down=$?",
            "ip addr add 10.9.9.9/24 dev lo 2>&1; echo addr=$?",
            f"ls {host_fd_path} 2>&1 | head -n1",  # the host's namespace fd is not in its /proc
            "nsenter --net=/proc/1/ns/net true 2>&1; echo nsenter=$?",
        ])
        r = sandbox.run(attack, ws, network=net)
        assert "BOUND" not in r.stdout
        assert "Address already in use" in r.stdout
        assert "down=0" not in r.stdout and "addr=0" not in r.stdout and "nsenter=0" not in r.stdout
        assert "No such file or directory" in r.stdout  # /proc/<host pid> does not exist in its pid namespace
        # the listener still serves, and the namespace is unchanged
        r = sandbox.run(f"exec 3<>/dev/tcp/127.0.0.1/{port}; head -n1 <&3; ip -o -4 addr show | wc -l", ws,
                        network=net)
        assert r.stdout.split() == ["gateway", "1"]
    finally:
        server.stop()


def test_closing_leaves_nothing_behind():
    children = subprocess.run(["ps", "--ppid", str(os.getpid()), "-o", "pid="], capture_output=True, text=True).stdout
    threads = threading.active_count()
    net = EpisodeNetwork()
    ino = net.inode()
    listener = net.listen()
    assert listener.getsockname()[0] == "127.0.0.1"
    net.close()
    net.close()  # idempotent
    listener.close()
    assert threading.active_count() == threads  # the namespace threads ended
    after = subprocess.run(["ps", "--ppid", str(os.getpid()), "-o", "pid="], capture_output=True, text=True).stdout
    assert len(after.split()) == len(children.split()) + 0  # no holder process (ps itself is gone again)
    # no process on the machine is in the namespace, and none of our fds points at it
    in_ns = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino == ino:
                in_ns.append(pid)
        except OSError:
            pass
    assert in_ns == []
    for fd in os.listdir("/proc/self/fd"):
        try:
            assert os.readlink(f"/proc/self/fd/{fd}") != f"net:[{ino}]"
        except OSError:
            pass
    with pytest.raises(NetworkUnavailable):
        net.listen()


def test_a_closed_network_is_refused_before_anything_runs(sandbox, ws):
    net = EpisodeNetwork()
    net.close()
    with pytest.raises(NetworkUnavailable):
        sandbox.run("true", ws, network=net)
    with pytest.raises(NetworkUnavailable):
        sandbox.spawn(["true"], ws, network=net)
