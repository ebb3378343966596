"""The rootless episode network (`options.network = "unix"`, tasks/unix_net.py): a per-episode Unix
socket served into the sandbox by a forwarder. Run here as root with the mode forced: the same
sandbox, socket and forwarder a user without root gets (auto picks it for them)."""

from __future__ import annotations

import os
import signal
import socket

import pytest

from harnessrl.config import ConfigError
from harnessrl.gateway import Gateway
from harnessrl.policies.registry import make_policy
from harnessrl.policies.replay import Replay
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.tasks.netns import EpisodeNetwork
from harnessrl.tasks.sandbox import bwrap_path
from harnessrl.tasks.unix_net import UnixNetwork, network_mode
from tests.harness.test_program import SUBMIT, KillMidCall, block, harness, tasks  # noqa: F401 (a fixture)
from tests.tasks.conftest import uid_processes

UNIX = "options.network=unix"


def test_a_bad_network_option_is_a_config_error_naming_it():
    with pytest.raises(ConfigError, match=r"options.network='wifi': choose auto, netns \(needs root\) or unix"):
        harness("options.network=wifi")


def test_auto_is_the_namespace_as_root_and_the_unix_socket_otherwise(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert network_mode("auto") == "netns" and network_mode("unix") == "unix"
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert network_mode("auto") == "unix" and network_mode(None) == "unix" and network_mode("netns") == "netns"


@pytest.mark.sandbox
@pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0, reason="needs bubblewrap and root")
def test_oracle_solves_and_noop_does_not_through_the_forwarder(tasks):  # noqa: F811
    h = harness(UNIX)
    solved = run_group(make_policy("oracle"), [RolloutItem(h, t, 0) for t in tasks])
    assert [(e.status, e.success) for e in solved] == [("ok", True)] * 2
    assert all(e.metadata["stop_reason"] == "program exited (0)" and len(e.metadata["calls"]) >= 2 for e in solved)
    noop = run_group(make_policy("noop"), [RolloutItem(h, t, 0) for t in tasks])
    assert [(e.success, len(e.turns)) for e in noop] == [(False, 1)] * 2


@pytest.mark.sandbox
@pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0, reason="needs bubblewrap and root")
def test_through_the_forwarder_a_program_reaches_its_own_gateway_only(tasks, tmp_path):  # noqa: F811
    host = socket.create_server(("127.0.0.1", 0))  # a host service on loopback
    other_net = EpisodeNetwork()  # another episode, on a network namespace
    other = Gateway(api_key="sk-other", model="m", sock=other_net.listen()).start()
    unix_dir = tmp_path / "other-unix"
    unix_dir.mkdir()
    other_unix = UnixNetwork(unix_dir)  # another episode, rootless: its socket is a host file
    other_u = Gateway(api_key="sk-other-u", model="m", sock=other_unix.listen(), url=other_unix.base_url).start()
    try:
        probe = ("python3 -c \"import socket,sys\nfor p in sys.argv[1:]:\n"
                 " try: socket.create_connection(('127.0.0.1', int(p)), 2); print(p, 'open')\n"
                 " except OSError as e: print(p, 'refused')\" " f"{host.getsockname()[1]} {other.port} {other_unix.port}")
        unix_probe = ("python3 -c \"import socket,sys\ns = socket.socket(socket.AF_UNIX)\n"
                      "try: s.connect(sys.argv[1]); print('unix open')\nexcept OSError as e: print('unix refused', e)\" "
                      f"{other_unix.socket_path}")
        own = ("python3 -c \"import os,urllib.request as u\ntry: u.urlopen(u.Request(os.environ['OPENAI_BASE_URL']"
               "+'/models', headers={'Authorization': 'Bearer sk-other-u'}))\nexcept Exception as e: print('own', e)\"")
        ep = run_group(Replay([block(probe), block(unix_probe), block(own), SUBMIT]),
                       [RolloutItem(harness(UNIX), tasks[0], 0)])[0]
        seen = "\n".join(t.observation for t in ep.turns)
        assert ep.metadata["stop_reason"] == "program exited (0)", ep.metadata["program_output"]
        # no host loopback port, no other episode's gateway (namespace or socket); not even the
        # other rootless episode's forwarder port: that is a port of another sandbox's namespace
        for port in (host.getsockname()[1], other.port, other_unix.port):
            assert f"{port} refused" in seen
        assert "unix refused" in seen and "unix open" not in seen
        assert "own HTTP Error 401" in seen  # its own gateway, which checks the key
        assert other.n_calls == other_u.n_calls == 0 and other.refusals == other_u.refusals == []
    finally:
        for gw in (other, other_u):
            gw.close()
        other_net.close()
        other_unix.close()
        host.close()


@pytest.mark.sandbox
@pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0, reason="needs bubblewrap and root")
def test_kill_9_mid_call_under_the_forwarder_leaves_no_orphan(tasks):  # noqa: F811
    policy = KillMidCall()
    ep = run_group(policy, [RolloutItem(harness(UNIX), tasks[0], 0)])[0]
    assert ep.status == "crash" and not ep.success
    assert ep.metadata["program_exit"] == 128 + signal.SIGKILL  # the forwarder reports its child's death
    assert uid_processes(policy.uid) == []
