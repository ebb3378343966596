"""The gateway against the real `openai` client: a scripted responder answers each call.

Nothing here mocks the gateway: the client speaks HTTP to a served socket, and a thread plays
the session's side (`next_call` -> `answer`) with fixed replies.
"""

from __future__ import annotations

import http.client
import json
import threading

import openai
import pytest

from harnessrl.gateway import Gateway, Reply

KEY = "sk-episode-0"


class Responder:
    """Answers the gateway's calls in order with `replies`; keeps the requests it saw."""

    def __init__(self, gw: Gateway, replies: list[Reply]):
        self.gw, self.replies, self.requests = gw, list(replies), []
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while self.replies:
            call = self.gw.next_call(timeout=10)
            if call is None:
                return
            self.requests.append(call.request)
            self.gw.answer(call, self.replies.pop(0))


@pytest.fixture
def gw():
    g = Gateway(api_key=KEY, model="tiny", max_request_bytes=64_000, max_calls=3).start()
    yield g
    g.close()


def client(gw: Gateway, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key=key, max_retries=2, timeout=20)


TOOLS = [{"type": "function", "function": {"name": "bash", "description": "run a command",
                                           "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}]


def test_completion_round_trip_keeps_what_the_program_asked(gw):
    r = Responder(gw, [Reply(content="hello there", prompt_tokens=7, completion_tokens=3)])
    out = client(gw).chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "hi"}], tools=TOOLS, tool_choice="auto",
        stop=["\n\n"], max_tokens=17, temperature=0)
    assert out.choices[0].message.content == "hello there"
    assert out.usage.prompt_tokens == 7 and out.usage.completion_tokens == 3
    req = r.requests[0]
    assert req["tools"] == TOOLS and req["stop"] == ["\n\n"] and req["max_tokens"] == 17 and req["temperature"] == 0


def test_tool_calls_come_back_as_openai_tool_calls_streaming_and_not(gw):
    call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}
    Responder(gw, [Reply(tool_calls=[call], finish_reason="tool_calls")] * 2)
    c = client(gw)
    out = c.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}], tools=TOOLS)
    msg = out.choices[0].message
    assert out.choices[0].finish_reason == "tool_calls"
    assert msg.tool_calls[0].id == "call_1" and json.loads(msg.tool_calls[0].function.arguments) == {"cmd": "ls"}
    stream = c.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}], tools=TOOLS,
                                       stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    deltas = [d for ch in chunks for ch0 in ch.choices for d in (ch0.delta.tool_calls or [])]
    assert deltas[0].function.name == "bash" and deltas[0].id == "call_1"
    assert chunks[-1].usage is not None and chunks[-2].choices[0].finish_reason == "tool_calls"


def test_streamed_content_reassembles(gw):
    Responder(gw, [Reply(content="a streamed answer ✓")])
    stream = client(gw).chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}], stream=True)
    assert "".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices) == "a streamed answer ✓"


def test_models_lists_the_one_served_model(gw):
    assert [m.id for m in client(gw).models.list()] == ["tiny"]


def test_another_credential_is_refused_once_and_not_retried(gw):
    with pytest.raises(openai.AuthenticationError):
        client(gw, key="sk-episode-1").chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}])
    assert [(r.status, r.code) for r in gw.refusals] == [(401, "invalid_api_key")]  # max_retries=2, one try
    assert gw.n_calls == 0


def test_oversize_request_is_refused_as_context_length(gw):
    with pytest.raises(openai.BadRequestError) as err:
        client(gw).chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x" * 70_000}])
    assert "context length" in str(err.value)
    assert [(r.status, r.code) for r in gw.refusals] == [(400, "context_length_exceeded")]


def test_calls_past_the_budget_are_refused(gw):
    Responder(gw, [Reply(content="ok")] * 3)
    c = client(gw)
    for _ in range(3):
        c.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.PermissionDeniedError, match="budget"):
        c.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}])
    assert [(r.status, r.code) for r in gw.refusals] == [(403, "budget_exceeded")]


def test_spent_budget_and_closing_refuse_waiting_and_later_calls(gw):
    gw.spend("token budget of 100 spent")
    with pytest.raises(openai.PermissionDeniedError, match="token budget"):
        client(gw).chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}])
    g2 = Gateway(api_key=KEY, model="tiny").start()
    errors = []

    def waiting_call():
        try:
            client(g2).chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}])
        except openai.PermissionDeniedError as e:
            errors.append(e)

    t = threading.Thread(target=waiting_call)
    t.start()
    assert g2.next_call(timeout=10) is not None  # arrived, never answered
    g2.close("the program's budget of 5 turns is spent")
    t.join(timeout=10)
    assert not t.is_alive() and "5 turns" in str(errors[0])


@pytest.mark.parametrize("body,field", [
    (b"{not json", "invalid request"),
    (json.dumps({"messages": []}).encode(), "'messages'"),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "n": 3}).encode(), "'n'"),
    (json.dumps({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}).encode(), "text parts"),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "stop": ["a"] * 5}).encode(), "'stop'"),
])
def test_malformed_requests_are_400_naming_the_field(gw, body, field):
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=10)
    conn.request("POST", "/v1/chat/completions", body, {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
    resp = conn.getresponse()
    data = json.loads(resp.read())
    assert resp.status == 400 and resp.getheader("x-should-retry") == "false" and field in data["error"]["message"]
    assert gw.n_calls == 0


def test_call_limits_and_the_stop_cut():
    from harnessrl.gateway.openai_wire import call_limits, cut_at_stop

    assert call_limits({"messages": []}) == (None, ())
    assert call_limits({"max_tokens": 7, "stop": "END"}) == (7, ("END",))
    assert call_limits({"max_tokens": 7, "max_completion_tokens": 3, "stop": ["a", ""]}) == (3, ("a",))
    assert cut_at_stop("run ls\nEND more", ("END", "\n")) == ("run ls", True)  # the earliest stop, excluded
    assert cut_at_stop("no stop here", ("END",)) == ("no stop here", False)
    assert cut_at_stop("text", ()) == ("text", False)
