"""The endpoint policy against a real HTTP server on 127.0.0.1 speaking the chat-completions API."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harnessrl.evaluate.run import plan_eval, run_eval
from harnessrl.policies.base import AgentState
from harnessrl.policies.endpoint import EndpointAuthError, EndpointConfig, EndpointError, EndpointPolicy
from harnessrl.policies.registry import PolicySpec, make_policy
from harnessrl.records import RecordStore
from tests.helpers import send_json
from tests.harness.agent_fixtures import make_suite

KEY = "sk-test-SECRET-4f9c2a71"


class FakeEndpoint:
    """Replies from a script: each entry is (status, content-or-None, headers); the last one repeats."""

    def __init__(self, script):
        self.script, self.requests = list(script), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                status, content, headers = outer.script.pop(0) if len(outer.script) > 1 else outer.script[0]
                if callable(content):
                    content = content(body)
                payload = ({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": content}}],
                            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}
                           if status == 200 else {"error": {"message": f"status {status}", "type": "err"}})
                send_json(self, status, payload, headers)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("HRL_TEST_KEY", KEY)
    return "HRL_TEST_KEY"


def policy(server, key, **kw):
    return EndpointPolicy(EndpointConfig(model="fake-coder", base_url=server.url, api_key_env=key, backoff_s=0.01, **kw))


def state(seed=3):
    return AgentState(messages=[{"role": "user", "content": "hi"}], harness_id="h", task_id="t", turn=0,
                      episode_key="k", seed=seed)


def test_request_reply_usage_and_key_sent_only_as_bearer(key):
    server = FakeEndpoint([(200, "hello", None)])
    try:
        p = policy(server, key)
        [a] = p.act([state()])
        assert a.text == "hello" and a.prompt_tokens == 11 and a.info["completion_tokens"] == 7
        req = server.requests[0]
        assert req["path"] == "/v1/chat/completions" and req["auth"] == f"Bearer {KEY}"
        assert req["body"]["model"] == "fake-coder" and req["body"]["seed"] == 3 and req["body"]["messages"][0]["content"] == "hi"
        p.close()
    finally:
        server.close()


def test_retries_with_backoff_on_429_and_5xx(key):
    server = FakeEndpoint([(429, None, {"Retry-After": "0"}), (503, None, None), (500, None, None), (200, "ok", None)])
    try:
        p = policy(server, key)
        assert [a.text for a in p.act([state()])] == ["ok"] and p.retries == 3 and len(server.requests) == 4
    finally:
        server.close()


def test_gives_up_after_max_retries_with_a_scrubbed_message(key):
    server = FakeEndpoint([(502, None, None)])
    try:
        p = policy(server, key, max_retries=2)
        with pytest.raises(EndpointError, match="still failing after 3 attempts") as err:
            p.act([state()])
        assert KEY not in str(err.value) and len(server.requests) == 3
    finally:
        server.close()


def test_auth_failure_is_clear_and_immediate(key):
    server = FakeEndpoint([(401, None, None)])
    try:
        with pytest.raises(EndpointAuthError, match=r"rejected the API key from \$HRL_TEST_KEY") as err:
            policy(server, key).act([state()])
        assert KEY not in str(err.value) and len(server.requests) == 1
    finally:
        server.close()


def test_bad_request_is_not_retried_and_missing_key_is_named(key, monkeypatch):
    server = FakeEndpoint([(400, None, None)])
    try:
        with pytest.raises(EndpointError, match="HTTP 400"):
            policy(server, key).act([state()])
        assert len(server.requests) == 1
        monkeypatch.delenv("HRL_TEST_KEY")
        with pytest.raises(EndpointAuthError, match="set the environment variable HRL_TEST_KEY"):
            policy(server, key)
        with pytest.raises(Exception, match="base_url"):
            make_policy(PolicySpec("endpoint", "m", {"base_url": ""}))
    finally:
        server.close()


@pytest.mark.sandbox
def test_full_episode_never_leaks_the_key(key, tmp_path):
    def model(body):  # an agent that goes looking for secrets in the sandbox, then stops
        if len(body["messages"]) <= 2:
            return ("<function=execute_bash>\n<parameter=command>env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n';"
                    " grep -rsl sk- /app /tmp /etc 2>/dev/null | head</parameter>\n</function>")
        return "<function=finish>\n<parameter=message>done</parameter>\n</function>"

    server = FakeEndpoint([(200, model, None)])
    try:
        suite = make_suite(tmp_path / "suite")
        store = RecordStore(tmp_path / "store")
        spec = PolicySpec.parse("endpoint:fake-coder", {"base_url": server.url, "api_key_env": key})
        result = run_eval(spec, plan_eval(suite, ["openhands"], seeds=1), store, workers=1)
        ep = result.episodes[0]
        assert ep.num_turns == 2 and ep.policy_id == "endpoint:fake-coder" and ep.tokens_in == 22 and ep.tokens_out == 14
        assert "PATH=" in ep.turns[1].observation  # the command ran and printed the sandbox's environment
        everything = json.dumps([t.observation + t.action + t.tool_result for t in ep.turns]) + json.dumps(ep.metadata)
        assert KEY not in everything
        for f in Path(store.root).rglob("*"):
            if f.is_file():
                assert KEY.encode() not in f.read_bytes(), f
        from harnessrl.commands.eval import export
        export(result, tmp_path / "out")
        for f in (tmp_path / "out").rglob("*"):
            assert KEY.encode() not in f.read_bytes(), f
    finally:
        server.close()


def test_a_calls_cap_and_stop_go_upstream_below_and_beside_the_policys_own(key):
    server = FakeEndpoint([(200, "ok", None)])
    try:
        p = policy(server, key, max_tokens=100, stop=["END"])
        s = state()
        s.max_tokens, s.stop = 12, ("\n```", "END")
        p.act([s])
        s2 = state()
        s2.max_tokens = 500  # above the policy's budget: the policy's own wins
        p.act([s2])
        first, second = server.requests[0]["body"], server.requests[1]["body"]
        assert first["max_tokens"] == 12 and first["stop"] == ["END", "\n```"]
        assert second["max_tokens"] == 100 and second["stop"] == ["END"]
        p.close()
    finally:
        server.close()
