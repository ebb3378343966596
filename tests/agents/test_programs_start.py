"""The real programs start inside the episode sandbox and talk to a model endpoint.

Each test installs its program if needed (`harnessrl agents install`: measured on the 2-core
development machine, 77 s for mini-swe-agent, 76 s for aider-chat, 13 s for qwen-code, 9 s each for opencode and codex, 11 min
for OpenHands under heavy load; `make test` installs them all beforehand, `make agents`), starts
it with `launch_spec` in a bubblewrap
sandbox as the workspace uid, inside the episode's loopback-only network namespace, with a
throwaway responder (responder.py) listening there, and checks what it sent and how it ended.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from harnessrl.agents.install import install, installed, is_installed
from harnessrl.agents.launch import WHOLE_ADDRESS_SPACE_MB, launch_spec
from harnessrl.tasks.netns import EpisodeNetwork
from harnessrl.tasks.sandbox import Limits, Sandbox, bwrap_path
from harnessrl.tasks.workspace import Workspace

from ..tasks.conftest import uid_processes
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


def test_a_config_planted_in_app_is_not_the_one_mini_reads(episode):
    ws, net = episode
    ws.write_text("mini_textbased.yaml", "agent:\n  system_template: PLANTED\n")
    _, _, code, output, posts = run_program("mini-swe-agent", ws, net, [MINI_SUBMIT])
    assert code == 0, output[-2000:]
    assert "PLANTED" not in posts[0]["body"]["messages"][0]["content"]


def test_killing_the_program_mid_call_leaves_no_process(episode):
    ws, net = episode
    prog = ready("mini-swe-agent")
    sandbox = Sandbox(Limits(timeout_s=300, cpu_s=300), ro_paths=prog.ro_paths)
    responder = Responder(net.listen(), [MINI_SUBMIT], delay_s=600)  # the call never returns
    try:
        spec = launch_spec("mini-swe-agent", ws, sandbox, task="t", api_key="k", model="m",
                           base_url=f"http://127.0.0.1:{responder.port}/v1")
        proc = sandbox.spawn(list(spec.argv), ws, env=spec.env, binds=spec.binds, cwd=spec.cwd, limits=spec.limits,
                             network=net, stdin=False, lifetime_s=300)
        deadline = time.monotonic() + 120
        while not responder.posts and time.monotonic() < deadline:
            time.sleep(0.2)
        assert responder.posts, proc.read()
        assert uid_processes(ws.uid)  # the program is alive, waiting on its call
        code = proc.close()  # SIGKILL to the sandbox
    finally:
        responder.close()
    assert code != 0
    deadline = time.monotonic() + 10
    while uid_processes(ws.uid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert uid_processes(ws.uid) == []


def test_qwen_code_writes_a_file_through_a_tool_call(episode):
    ws, net = episode
    write = {"name": "write_file", "arguments": {"file_path": "/app/hello.txt", "content": "hi\n"}}
    replies = [write, "Done: /app/hello.txt written.", "No memories to save."]
    _, spec, code, output, posts = run_program("qwen-code-cli", ws, net, replies)
    assert code == 0, output[-3000:]
    assert ws.read_text("hello.txt") == "hi\n"
    assert os.stat(ws.root / "hello.txt").st_uid == ws.uid
    first = posts[0]["body"]
    assert posts[0]["path"] == "/v1/chat/completions" and first["model"] == "test-model"
    assert first["stream"] is True and "write_file" in [t["function"]["name"] for t in first["tools"]]
    second = posts[1]["body"]["messages"]  # the tool result goes back as a `tool` message with the call's id
    assert [m["role"] for m in second[-2:]] == ["assistant", "tool"]
    assert second[-1]["tool_call_id"] == "call_1"
    assert sorted(ws.listdir("")) == ["hello.txt"]  # its state stays in /agent, not in /app


def test_node_needs_the_lifted_address_space(episode):
    """Why `program_limits` lifts RLIMIT_AS: under the sandbox's default cap (4 GiB per process)
    Qwen Code starts but its HTTP client cannot (Node's fetch reserves address space for
    WebAssembly), so not one request reaches the endpoint; with the launch's limits it does."""
    ws, net = episode
    prog = ready("qwen-code-cli")
    sandbox = Sandbox(Limits(timeout_s=120, cpu_s=120), ro_paths=prog.ro_paths)
    for lifted in (False, True):
        responder = Responder(net.listen(), ["Hi."])
        try:
            spec = launch_spec("qwen-code-cli", ws, sandbox, task="Say hi.", api_key="k", model="m",
                               base_url=f"http://127.0.0.1:{responder.port}/v1", managed_memory=False)
            limits = spec.limits if lifted else sandbox.limits
            assert limits.memory_mb == (WHOLE_ADDRESS_SPACE_MB if lifted else 4096)
            proc = sandbox.spawn(list(spec.argv), ws, env=spec.env, binds=spec.binds, cwd=spec.cwd, limits=limits,
                                 network=net, stdin=False, lifetime_s=120)
            code = proc.close(grace_s=90)
            output = proc.read()
        finally:
            responder.close()
        if lifted:
            assert code == 0 and len(responder.posts) == 1, output[-2000:]
        else:
            assert code != 0 and responder.posts == [] and "fetch failed" in output, output[-2000:]


def test_openhands_headless_edits_through_file_editor_and_finishes(episode):
    ws, net = episode
    create = {"name": "file_editor", "arguments": {"command": "create", "path": "/app/hello.txt", "file_text": "hi\n",
                                                   "security_risk": "LOW", "summary": "create hello.txt"}}
    finish = {"name": "finish", "arguments": {"message": "done"}}
    _, spec, code, output, posts = run_program("openhands-cli", ws, net, [create, finish])
    assert code == 0, output[-3000:]
    assert ws.read_text("hello.txt") == "hi\n"
    assert os.stat(ws.root / "hello.txt").st_uid == ws.uid
    assert len(posts) == 2
    first = posts[0]["body"]
    assert first["model"] == "test-model" and not first.get("stream")
    assert {"terminal", "file_editor", "finish"} <= {t["function"]["name"] for t in first["tools"]}
    assert [m["role"] for m in posts[1]["body"]["messages"]][-2:] == ["assistant", "tool"]
    assert sorted(ws.listdir("")) == ["hello.txt"]


def test_through_the_program_only_its_own_endpoint_is_reachable(episode):
    """The agent's commands, run by mini-swe-agent, reach its endpoint and nothing else on loopback."""
    import socket

    ws, net = episode
    host = socket.create_server(("127.0.0.1", 0))  # a host service
    other_net = EpisodeNetwork()
    other = other_net.listen()  # another episode's gateway port
    try:
        ports = {"host": host.getsockname()[1], "other": other.getsockname()[1]}
        probe = "; ".join(
            f"(timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/{p}' 2>/dev/null && echo OPEN-{k} || echo CLOSED-{k})"
            for k, p in ports.items())
        replies = [MINI_PROBE.format(cmd=probe + "; curl -s -o /dev/null -w 'own=%{http_code}\\n' "
                                     "http://127.0.0.1:$PORT/v1/models"), MINI_SUBMIT]
        prog = ready("mini-swe-agent")
        sandbox = Sandbox(Limits(timeout_s=300, cpu_s=300), ro_paths=prog.ro_paths)
        responder = Responder(net.listen(), replies)
        replies[0] = replies[0].replace("$PORT", str(responder.port))
        responder.replies = replies
        try:
            spec = launch_spec("mini-swe-agent", ws, sandbox, task="t", api_key="k", model="test-model",
                               base_url=f"http://127.0.0.1:{responder.port}/v1")
            proc = sandbox.spawn(list(spec.argv), ws, env=spec.env, binds=spec.binds, cwd=spec.cwd,
                                 limits=spec.limits, network=net, stdin=False, lifetime_s=300)
            code = proc.close(grace_s=240)
        finally:
            responder.close()
        assert code == 0, proc.read()[-2000:]
        observation = responder.posts[1]["body"]["messages"][-1]["content"]
        assert "CLOSED-host" in observation and "CLOSED-other" in observation and "OPEN-" not in observation
        assert "own=200" in observation
    finally:
        host.close()
        other.close()
        other_net.close()


def test_opencode_writes_a_file_through_a_tool_call_and_ignores_the_tasks_config(episode):
    ws, net = episode
    # a project config in /app that, if read, would point the program elsewhere (it is read
    # after the launch's own file and wins, unless project config is off)
    ws.write_text("opencode.json", json.dumps({"provider": {"harnessrl": {"options": {"baseURL": "http://127.0.0.1:1/v1"}}}}))
    write = {"name": "write", "arguments": {"filePath": "/app/hello.txt", "content": "hi\n"}}
    _, spec, code, output, posts = run_program("opencode-cli", ws, net, [write, "Done: /app/hello.txt written."],
                                               max_output_tokens=1024)
    assert code == 0, output[-3000:]
    assert ws.read_text("hello.txt") == "hi\n"
    assert os.stat(ws.root / "hello.txt").st_uid == ws.uid
    # two main-line calls and no title call (the session is titled); Chat Completions, streamed
    assert [p["path"] for p in posts] == ["/v1/chat/completions"] * 2, [p["body"]["messages"][0] for p in posts]
    first = posts[0]["body"]
    assert first["model"] == "test-model" and first["stream"] is True and first["max_tokens"] == 1024
    assert {"bash", "edit", "read", "write"} <= {t["function"]["name"] for t in first["tools"]}
    assert posts[0]["headers"]["authorization"] == "Bearer sk-episode-key"
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][1]["content"] == "Make the tests pass."  # verbatim: not quoted as an argument is
    second = posts[1]["body"]["messages"]  # the tool result goes back as a `tool` message with the call's id
    assert [m["role"] for m in second[-2:]] == ["assistant", "tool"] and second[-1]["tool_call_id"] == "call_1"
    assert sorted(ws.listdir("")) == ["hello.txt", "opencode.json"]  # its state stays in /agent


def run_codex(ws, net, replies: list) -> tuple[int, str, list]:
    """Codex against the real gateway (it speaks only the Responses API), `replies` answering its calls in order."""
    import threading

    from harnessrl.gateway import Gateway

    prog = ready("codex-cli")
    sandbox = Sandbox(Limits(timeout_s=300, cpu_s=300), ro_paths=prog.ro_paths)
    gw = Gateway(api_key="sk-episode-key", model="test-model", sock=net.listen(), max_calls=5).start()
    replies, calls = list(replies), []

    def answer() -> None:
        while replies:
            call = gw.next_call(timeout=240)
            if call is None:
                return
            calls.append(call)
            gw.answer(call, replies.pop(0))

    threading.Thread(target=answer, daemon=True).start()
    try:
        spec = launch_spec("codex-cli", ws, sandbox, task="Say hi.", api_key="sk-episode-key", model="test-model",
                           base_url=gw.base_url)
        proc = sandbox.spawn(list(spec.argv), ws, env=spec.env, binds=spec.binds, cwd=spec.cwd, limits=spec.limits,
                             network=net, stdin=False, lifetime_s=270)
        code = proc.close(grace_s=240)
        output = proc.read()
    finally:
        gw.close()
    assert not gw.refusals, gw.refusals
    return code, output, calls


def test_codex_runs_a_command_through_the_gateways_responses_wire(episode):
    """The program's second call carries the first call's id and arguments back unchanged."""
    from harnessrl.gateway import Reply

    ws, net = episode
    run = {"id": "call_x1", "type": "function", "function": {"name": "exec_command", "arguments": json.dumps(
        {"cmd": "id -u > uid.txt; echo hi > hello.txt", "workdir": "/app", "yield_time_ms": 30000})}}
    code, output, calls = run_codex(ws, net, [Reply(tool_calls=[run], finish_reason="tool_calls"), Reply(content="Done.")])
    assert code == 0 and len(calls) == 2, output[-3000:]
    assert ws.read_text("hello.txt") == "hi\n" and ws.read_text("uid.txt").strip() == str(ws.uid)
    assert [c.wire for c in calls] == ["responses", "responses"] and calls[0].request["stream"] is True
    first = calls[0].request
    assert "exec_command" in [t["function"]["name"] for t in first["tools"]]
    assert first["messages"][-1]["role"] == "user" and first["messages"][-1]["content"].rstrip("\n") == "Say hi."
    back = calls[1].request["messages"]  # its call and the command's output, as chat messages
    assert back[-2]["tool_calls"] == [run] and back[-1]["role"] == "tool" and back[-1]["tool_call_id"] == "call_x1"
    assert sorted(ws.listdir("")) == ["hello.txt", "uid.txt"]  # its state stays in /agent


def test_codex_stops_at_a_reply_cut_at_its_length(episode):
    """A reply the policy's token cap cut goes back `incomplete`, as the API sends it: Codex ends its run."""
    from harnessrl.gateway import Reply

    ws, net = episode
    code, output, calls = run_codex(ws, net, [Reply(content="Half an ans", finish_reason="length"), Reply(content="x")])
    assert code == 1 and len(calls) == 1, output[-3000:]
    assert "Incomplete response returned, reason: max_output_tokens" in output
