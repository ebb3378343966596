"""The gateway's Responses wire (`POST /v1/responses`) against the real `openai` client: the
request reaches the session in the chat form every harness reads, and the answer parses as a
Responses object and as its event stream, the same call ids and arguments going both ways."""

from __future__ import annotations

import json

import httpx
import pytest

from harnessrl.gateway import Gateway, Reply

from .test_server import KEY, Responder, client

CALL = {"id": "call_7", "type": "function", "function": {"name": "exec_command", "arguments": '{"cmd": "ls"}'}}
TOOLS = [{"type": "function", "name": "exec_command", "description": "run", "strict": False,
          "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
         {"type": "web_search"}]


@pytest.fixture
def gw():
    g = Gateway(api_key=KEY, model="tiny", max_request_bytes=64_000, max_calls=5).start()
    yield g
    g.close()


def test_a_responses_request_reaches_the_session_in_chat_form_and_the_answer_parses(gw):
    r = Responder(gw, [Reply(content="Listing.", tool_calls=[CALL], finish_reason="tool_calls", prompt_tokens=11,
                             completion_tokens=4)])
    history = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be brief"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
        {"type": "reasoning", "summary": [], "encrypted_content": None},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
        {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": '{"cmd": "pwd"}'},
        {"type": "function_call", "call_id": "call_2", "name": "exec_command", "arguments": '{"cmd": "id"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "/app"},
        {"type": "function_call_output", "call_id": "call_2", "output": "uid=1"},
    ]
    out = client(gw).responses.create(model="tiny", instructions="You are Codex.", input=history, tools=TOOLS,
                                      max_output_tokens=99, store=False, parallel_tool_calls=True, tool_choice="auto")
    chat = r.requests[0]
    assert [m["role"] for m in chat["messages"]] == ["system", "developer", "user", "assistant", "tool", "tool"]
    assert chat["messages"][0]["content"] == "You are Codex."
    assistant = chat["messages"][3]  # the text and both calls of one reply: one assistant message
    assert assistant["content"] == "Looking." and [c["id"] for c in assistant["tool_calls"]] == ["call_1", "call_2"]
    assert chat["messages"][4] == {"role": "tool", "tool_call_id": "call_1", "content": "/app"}
    assert [t["function"]["name"] for t in chat["tools"]] == ["exec_command"]  # the built-in web_search is dropped
    assert chat["max_tokens"] == 99 and chat["tool_choice"] == "auto"
    # the answer: the text as a message item, the call as a function_call item with the same id
    assert out.status == "completed" and [o.type for o in out.output] == ["message", "function_call"]
    assert out.output_text == "Listing."
    assert (out.output[1].call_id, out.output[1].name, out.output[1].arguments) == ("call_7", "exec_command",
                                                                                    '{"cmd": "ls"}')
    assert (out.usage.input_tokens, out.usage.output_tokens) == (11, 4)


def test_the_streamed_answer_is_a_responses_event_stream(gw):
    Responder(gw, [Reply(content="Done.", prompt_tokens=3, completion_tokens=2),
                   Reply(tool_calls=[CALL], finish_reason="tool_calls")])
    c = client(gw)
    with c.responses.stream(model="tiny", input="say done") as stream:
        types = [e.type for e in stream]
        final = stream.get_final_response()
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert "response.output_text.delta" in types and final.output_text == "Done."
    with c.responses.stream(model="tiny", input="run ls", tools=TOOLS) as stream:
        final = stream.get_final_response()
    assert [(o.type, o.call_id) for o in final.output] == [("function_call", "call_7")]


def test_a_reply_cut_at_its_length_is_incomplete(gw):
    Responder(gw, [Reply(content="Half a", finish_reason="length")])
    out = client(gw).responses.create(model="tiny", input="long answer")
    assert out.status == "incomplete" and out.incomplete_details.reason == "max_output_tokens"


@pytest.mark.parametrize("body,field", [
    ({"model": "tiny", "input": [{"type": "computer_call"}]}, "input[0]"),
    ({"model": "tiny", "input": [{"type": "function_call", "name": "x"}]}, "input[0] (function_call)"),
    ({"model": "tiny", "input": 3}, "'input'"),
    ({"model": "tiny", "input": "x", "instructions": 5}, "'instructions'"),
])
def test_malformed_responses_requests_are_400_naming_the_field(gw, body, field):
    r = httpx.post(gw.base_url + "/responses", json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    assert r.status_code == 400 and field in json.loads(r.text)["error"]["message"]
    assert gw.n_calls == 0


def test_a_named_tool_choice_and_a_plain_string_input_translate():
    from harnessrl.gateway.responses_wire import to_chat

    chat = to_chat({"model": "tiny", "input": "hi", "tools": TOOLS, "temperature": 0.5,
                    "tool_choice": {"type": "function", "name": "exec_command"}})
    assert chat["messages"] == [{"role": "user", "content": "hi"}] and chat["temperature"] == 0.5
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "exec_command"}}
    assert "max_tokens" not in chat and "stream" not in chat
