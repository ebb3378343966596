"""Forward mode: calls go to an OpenAI-compatible upstream, its token ids and log-probs are recorded.

The upstream here is our own gateway serving a real (tiny, locally built) LM on loopback in a
thread, answered by the same code as `harnessrl gateway serve` (upstream_tokens.answer_call),
which writes vLLM's token fields when asked. The forwarding (request, HTTP, token records) is
what is under test; its figures are checked against the same LM run directly, in process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import openai
import pytest

from harnessrl.gateway import Gateway
from harnessrl.harness.base import load_spec, make_harness
from harnessrl.policies.base import AgentState
from harnessrl.policies.endpoint import ForwardConfig, ForwardPolicy
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.policies.registry import PolicySpec, make_policy
from harnessrl.policies.upstream_tokens import answer_call, read_tokens
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.rollout.suites import load_suite
from harnessrl.tasks.sandbox import bwrap_path
from harnessrl.train.token_check import check_rows
from tests.harness.test_program import PROGRAM
from tests.tiny_lm import build

MESSAGES = [{"role": "system", "content": "You are an agent. Reply with one command per turn."},
            {"role": "user", "content": "What color is the lamp?"}]


class Upstream:
    """A policy behind a gateway on loopback, each call answered as `harnessrl gateway serve` does."""

    def __init__(self, policy, key: str = "sk-upstream"):
        self.policy, self.gw = policy, Gateway(api_key=key, model="upstream-model").start()
        self.requests: list[dict] = []
        self.actions: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        issued: dict[str, str] = {}
        n = 0
        while not self._stop.is_set():
            call = self.gw.next_call(timeout=0.05)
            if call is None:
                continue
            self.requests.append(call.request)
            self.actions.append(answer_call(self.gw, call, self.policy, issued, n))
            n += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.gw.close()


def lm(path) -> LMPolicy:
    return LMPolicy.from_config(LMConfig(model=str(path), temperature=0.0, max_new_tokens=10, dtype="float32",
                                         device="cpu"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def upstream(tiny):
    up = Upstream(lm(tiny))
    yield up
    up.close()


@pytest.fixture
def forward(upstream, monkeypatch):
    monkeypatch.setenv("UPSTREAM_KEY", "sk-upstream")
    pol = ForwardPolicy(ForwardConfig(base_url=upstream.gw.base_url, api_key_env="UPSTREAM_KEY", max_tokens=10))
    yield pol
    pol.close()


def state(messages, key="e0", request=None) -> AgentState:
    return AgentState(messages=[dict(m) for m in messages], harness_id="h", task_id="t", turn=0, episode_key=key,
                      request=request)


def test_forward_records_the_ids_and_logprobs_a_direct_call_computes(tiny, forward, upstream):
    assert forward.model == "upstream-model"  # found through /models
    got = forward.act([state(MESSAGES)])[0]
    direct = lm(tiny).act([state(MESSAGES)])[0]
    assert got.text == direct.text and got.info["token_source"] == "token_ids"
    assert got.token_ids.tolist() == direct.token_ids.tolist() and got.loss_mask.tolist() == direct.loss_mask.tolist()
    on = direct.loss_mask == 1
    assert on.sum() > 0 and np.abs(got.logprobs[on] - direct.logprobs[on]).max() <= 1e-4
    assert np.all(got.logprobs[~on] == 0) and got.prompt_tokens == direct.prompt_tokens
    sent = upstream.requests[0]  # the vLLM token fields were asked for, and this policy's sampling used
    assert sent["logprobs"] is True and sent["return_token_ids"] is True and sent["temperature"] == 0.0


def test_a_second_call_records_only_what_it_adds_to_the_context(forward, upstream):
    s = state(MESSAGES)
    first = forward.act([s])[0]
    s.messages = s.messages + [{"role": "assistant", "content": first.text},
                               {"role": "user", "content": "Result: nothing here."}]
    second = forward.act([s])[0]
    prompt2 = upstream.actions[1].token_ids[upstream.actions[1].loss_mask == 0].tolist()  # the upstream's own prompt
    keep = second.info["keep"]
    context1 = first.token_ids.tolist()
    assert 0 < keep <= len(context1) and context1[:keep] == prompt2[:keep]
    new = second.token_ids[second.loss_mask == 0].tolist()
    assert new == prompt2[keep:] and second.prompt_tokens == len(prompt2)
    assert s.cache["upstream"] == prompt2 + second.token_ids[second.loss_mask == 1].tolist()
    resets = forward.pop_resets("e0") if keep == len(context1) else None
    assert resets in (None, [])


def test_forward_mode_serve_passes_a_programs_tool_call_through_both_gateways(tmp_path, monkeypatch):
    """`gateway serve --forward`: a client's request with tools goes upstream as sent; the upstream's
    parsed tool call comes back to the client unchanged."""
    replies = tmp_path / "r.jsonl"
    call = {"name": "read_file", "arguments": {"file_path": "/app/a.py"}}
    replies.write_text(json.dumps({"content": "Reading.\n<tool_call>\n" + json.dumps(call) + "\n</tool_call>"}) + "\n")
    up = Upstream(make_policy(f"replay:{replies}"))
    monkeypatch.setenv("UPSTREAM_KEY", "sk-upstream")
    down = Upstream(make_policy(PolicySpec.parse(f"forward:{up.gw.base_url}", {"api_key_env": "UPSTREAM_KEY"})),
                    key="sk-down")
    try:
        tools = [{"type": "function", "function": {"name": "read_file", "parameters": {
            "type": "object", "properties": {"file_path": {"type": "string"}}}}}]
        out = openai.OpenAI(base_url=down.gw.base_url, api_key="sk-down", max_retries=0).chat.completions.create(
            model="anything", messages=[{"role": "user", "content": "read a.py"}], tools=tools, stream=False)
        msg = out.choices[0].message
        assert out.choices[0].finish_reason == "tool_calls" and msg.content == "Reading."
        assert [(c.function.name, json.loads(c.function.arguments)) for c in msg.tool_calls] == [("read_file", call["arguments"])]
        sent = up.requests[0]
        assert sent["tools"] == tools and sent["model"] == "upstream-model" and sent["messages"][0]["content"] == "read a.py"
        assert "stream" not in sent  # the upstream answers whole; the client's own stream flag stays downstream
    finally:
        down.close()
        up.close()


def test_read_tokens_takes_each_shape_an_upstream_answers_in():
    lp = {"content": [{"token": "token_id:7", "logprob": -0.5}, {"token": "token_id:2", "logprob": -1.0}]}
    old_vllm = read_tokens({"choices": [{"logprobs": lp}]})
    assert (old_vllm.completion_ids, old_vllm.logprobs, old_vllm.source) == ([7, 2], [-0.5, -1.0], "logprob_tokens")
    hosted = read_tokens({"choices": [{"logprobs": {"content": [{"token": "Hi", "logprob": -0.1}]}}]})
    assert (hosted.completion_ids, hosted.logprobs, hosted.source) == (None, [-0.1], "logprobs_only")
    new_vllm = read_tokens({"prompt_token_ids": [1, 2], "choices": [{"token_ids": [5], "logprobs": None}]})
    assert (new_vllm.prompt_ids, new_vllm.completion_ids, new_vllm.source) == ([1, 2], [5], "token_ids")
    assert read_tokens({"choices": [{"message": {"content": "x"}}]}).source == "none"


def test_serve_forward_to_nothing_or_not_a_url_is_a_one_line_error():
    env = {**os.environ, "HARNESSRL_GATEWAY_KEY": "sk-debug"}
    for arg, says in (("not-a-url", "error: --forward 'not-a-url'"), ("http://127.0.0.1:9/v1", "error: --forward: http://127.0.0.1:9/v1")):
        r = subprocess.run([sys.executable, "-m", "harnessrl.cli", "gateway", "serve", "--forward", arg, "--port", "0"],
                           capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 2 and says in r.stderr + r.stdout, r.stderr + r.stdout


@pytest.mark.sandbox
@pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0, reason="needs bubblewrap and root (per-episode network namespace)")
def test_a_program_episode_in_forward_mode_records_rows_the_model_recomputes(tiny, forward):
    """A program (mini-swe-agent's text protocol, in its sandbox and network namespace) in forward mode:
    every call's recorded tokens are the upstream's, and the same LM recomputes their log-probs."""
    h = make_harness(load_spec("mini-swe-agent", ["options.program=script", f"options.script={PROGRAM}", "max_turns=3"]))
    task = list(load_suite("code-v1").tasks)[0]
    ep = run_group(forward, [RolloutItem(h, task, 0)], run_id="forward")[0]
    ep.metadata["context_resets"] = [list(r) for r in forward.pop_resets("0")]
    assert ep.status in ("ok", "turn_limit") and len(ep.turns) == len(ep.metadata["calls"]) >= 2
    assert all(t.loss_mask.sum() > 0 and len(t.token_ids) == len(t.logprobs) for t in ep.turns)
    report = check_rows(lm(tiny), [ep])
    assert report["unsampled"] == 0 and report["tokens"] > 0 and report["max_abs_diff"] <= 1e-4, report


class HostedAPI:
    """A provider that, like OpenAI's API, refuses fields it does not know (vLLM's token fields) with a
    400 and returns log-probs with token strings only: the upstream forward mode must step down for."""

    def __init__(self):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from tests.helpers import send_json

        self.bodies: list[dict] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                send_json(self, 200, {"object": "list", "data": [{"id": "hosted", "object": "model"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.bodies.append(body)
                if "return_token_ids" in body:
                    send_json(self, 400, {"error": {"message": "Unrecognized request argument supplied: return_token_ids",
                                                    "type": "invalid_request_error"}})
                    return
                lp = {"content": [{"token": "Hi", "logprob": -0.25, "bytes": [72, 105], "top_logprobs": []}]} \
                    if body.get("logprobs") else None
                send_json(self, 200, {"id": "x", "object": "chat.completion", "created": 0, "model": "hosted",
                                      "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"},
                                                   "logprobs": lp, "finish_reason": "stop"}],
                                      "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_an_upstream_refusing_vllm_fields_is_asked_again_with_logprobs_only(monkeypatch):
    api = HostedAPI()
    monkeypatch.setenv("HOSTED_KEY", "sk-hosted")
    pol = ForwardPolicy(ForwardConfig(base_url=api.url, api_key_env="HOSTED_KEY", max_retries=0))
    try:
        first, second = pol.act([state(MESSAGES)])[0], pol.act([state(MESSAGES, key="e1")])[0]
    finally:
        pol.close()
        api.close()
    assert [("return_token_ids" in b, bool(b.get("logprobs"))) for b in api.bodies] == [(True, True), (False, True), (False, True)]
    for a in (first, second):  # text and log-probs, but no ids: an evaluation record, no training row
        assert a.text == "Hi" and a.info["token_source"] == "logprobs_only" and a.info["token_options"] == "logprobs"
        assert len(a.token_ids) == 0 and a.prompt_tokens == 5
