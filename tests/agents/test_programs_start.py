"""The real programs start inside the episode sandbox and talk to a model endpoint.

Each test installs its program if needed (`harnessrl agents install`, about a minute each from
the registry; `make test` installs both beforehand), starts it with `launch_spec` in a bubblewrap
sandbox as the workspace uid, inside the episode's loopback-only network namespace, with a
throwaway responder (responder.py) listening there, and checks what it sent and how it ended.
"""

from __future__ import annotations

import json
import os

import pytest

from harnessrl.agents.install import install, installed, is_installed
from harnessrl.agents.launch import WHOLE_ADDRESS_SPACE_MB, launch_spec
from harnessrl.tasks.netns import EpisodeNetwork
from harnessrl.tasks.sandbox import Limits, Sandbox, bwrap_path
from harnessrl.tasks.workspace import Workspace

from .responder import Responder

pytestmark = [pytest.mark.sandbox, pytest.mark.slow,
              pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0,
                                 reason="needs bubblewrap and root (per-episode uid and network namespace)")]

MINI_PROBE = "THOUGHT: look around first.\n\n```mswea_bash_command\n{cmd}\n```"
MINI_SUBMIT = "THOUGHT: done.\n\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"


def ready(name: str):
    if not is_installed(name):
        install(name)
    return installed(name)


@pytest.fixture
def episode():
    with Workspace.create(None, quota_mb=64) as ws, EpisodeNetwork() as net:
        yield ws, net


def run_program(name: str, ws, net, replies: list[str], *, status: int = 200, error_headers=None,
                grace_s: float = 240, **options):
    prog = ready(name)
    sandbox = Sandbox(Limits(timeout_s=300, cpu_s=300), ro_paths=prog.ro_paths)
    responder = Responder(net.listen(), replies, status=status, error_headers=error_headers)
    try:
        spec = launch_spec(name, ws, sandbox, task="Make the tests pass.", api_key="sk-episode-key",
                           model="test-model", base_url=f"http://127.0.0.1:{responder.port}/v1", **options)
        proc = sandbox.spawn(list(spec.argv), ws, env=spec.env, binds=spec.binds, cwd=spec.cwd, limits=spec.limits,
                             network=net, stdin=False, lifetime_s=grace_s + 30)
        code = proc.close(grace_s=grace_s)
        output = proc.read()
    finally:
        responder.close()
    return prog, spec, code, output, responder.posts


def test_mini_swe_agent_runs_in_the_sandbox_and_submits(episode):
    ws, net = episode
    prog = ready("mini-swe-agent")
    probe = (f"id -u > /app/uid.txt; touch {prog.env}/probe 2> /app/ro.txt; echo rc=$? >> /app/ro.txt; "
             "ulimit -v >> /app/ro.txt")
    _, spec, code, output, posts = run_program("mini-swe-agent", ws, net,
                                               [MINI_PROBE.format(cmd=probe), MINI_SUBMIT])
    assert code == 0, output[-3000:]
    assert spec.limits.memory_mb == WHOLE_ADDRESS_SPACE_MB and not spec.notes
    # it ran as the workspace uid, could not write its own install, and had the lifted address space
    assert ws.read_text("uid.txt").strip() == str(ws.uid)
    ro = ws.read_text("ro.txt")
    assert "Read-only file system" in ro and "rc=1" in ro
    assert ro.splitlines()[-1] == str(WHOLE_ADDRESS_SPACE_MB << 10)
    # what it sent: two plain chat completions, text protocol, no tools, no stream
    assert [p["path"] for p in posts] == ["/v1/chat/completions"] * 2
    first, second = (p["body"] for p in posts)
    assert first["model"] == "test-model"
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "mswea_bash_command" in first["messages"][0]["content"]
    assert "Make the tests pass." in first["messages"][1]["content"]
    assert "tools" not in first and not first.get("stream")
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert "<returncode>0</returncode>" in second["messages"][3]["content"]
    assert posts[0]["headers"]["authorization"] == "Bearer sk-episode-key"
    # how it ended: submitted, recorded in its trajectory outside /app
    traj = json.loads((spec.state_dir / "traj.json").read_text())
    assert traj["info"]["exit_status"] == "Submitted"
    assert not ws.exists("traj.json")


def test_mini_swe_agent_stops_at_once_on_401(episode):
    ws, net = episode
    _, _, code, output, posts = run_program("mini-swe-agent", ws, net, [MINI_SUBMIT], status=401,
                                            error_headers={"x-should-retry": "false"})
    assert len(posts) == 1, output[-2000:]
    assert code == 1 and "AuthenticationError" in output


def test_aider_edits_a_file_through_a_search_replace_block(episode):
    ws, net = episode
    ws.write_text("hello.py", "x = 1\n")
    reply = "hello.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n"
    _, spec, code, output, posts = run_program("aider-cli", ws, net, [reply], files=["hello.py"])
    assert code == 0, output[-3000:]
    assert ws.read_text("hello.py") == "x = 2\n"
    assert os.stat(ws.root / "hello.py").st_uid == ws.uid
    assert len(posts) == 1, [p["body"]["messages"][-1] for p in posts]
    body = posts[0]["body"]
    assert posts[0]["path"] == "/v1/chat/completions"
    assert body["model"] == "test-model" and body["stream"] is True and body["temperature"] == 0
    assert "tools" not in body
    assert body["messages"][0]["role"] == "system" and "SEARCH/REPLACE" in body["messages"][0]["content"]
    assert any("x = 1" in str(m["content"]) for m in body["messages"])  # the added file's content
    assert "Make the tests pass." in str(body["messages"][-1]["content"])
    # nothing of aider's lands in /app: histories and config live in its state dir
    assert sorted(ws.listdir("")) == ["hello.py"]
    assert (spec.state_dir / "chat.history.md").exists()


def test_aider_stops_at_once_on_400_and_exits_0(episode):
    ws, net = episode
    _, _, code, output, posts = run_program("aider-cli", ws, net, ["unused"], status=400,
                                            error_headers={"x-should-retry": "false"})
    assert len(posts) == 1, output[-2000:]
    assert code == 0  # aider reports the error and ends normally
    assert "BadRequestError" in output or "refused by the test responder" in output
