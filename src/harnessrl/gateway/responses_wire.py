"""The OpenAI Responses wire (`POST /v1/responses`), served by translation to and from the
chat-completions form the rest of harnessrl reads.

    chat = to_chat(body)                                 # the request as a chat-completions body
    obj = response_json(call_id, model, reply)           # a non-streamed answer
    for event in response_events(call_id, model, reply): # a streamed one (SSE `event:` + `data:`)

Why translate: a program that speaks only Responses (Codex CLI 0.171.0 refuses
`wire_api = "chat"` since its chat support was removed) then goes through the same gateway,
session, policy and records as every chat program: the call's `request` is the translated
body, so the session renders it to text the same way (harness/_program_wire.py).

Requests: `instructions` -> a system message; `input` a string (one user message) or a list of
items: `message` (role system/developer/user/assistant, content a string or `input_text` /
`output_text` parts), `function_call` (-> an assistant `tool_calls` entry, its `call_id` the
id, consecutive calls and the assistant text before them joined into one assistant message,
as the chat form has them), `function_call_output` (-> a `tool` message), `reasoning` (dropped:
there is none to replay; the gateway never emits it). `tools`: function tools become chat
function tools; built-in tools (`web_search`, ...) are dropped: the gateway cannot run them,
and a policy never sees them. `max_output_tokens` -> `max_tokens`; `tool_choice`, `temperature`,
`top_p`, `stream` pass through. Anything else (store, include, reasoning, prompt_cache_key,
client_metadata, parallel_tool_calls) is kept only in the original and ignored, as a provider
without those features does. A field of the wrong type raises `WireError` naming it.

Answers: one `message` item (role assistant, one `output_text` part) when the reply has text,
then one `function_call` item per tool call (`call_id` = the chat tool call's id, `arguments`
the same JSON string), status `completed` (`incomplete` with reason `max_output_tokens` for a
reply cut at its length). Usage in the Responses names (input_tokens, output_tokens).
"""

from __future__ import annotations

import time
from typing import Any

from harnessrl.gateway.openai_wire import MAX_MESSAGES, MAX_TOOLS, TooMany, WireError, check_request

MESSAGE_ROLES = ("system", "developer", "user", "assistant")
TEXT_PARTS = ("input_text", "output_text", "text")


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for i, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") not in TEXT_PARTS or not isinstance(part.get("text"), str):
                raise WireError(f"{where}[{i}]: only text parts are served ({{'type': 'input_text', 'text': ...}})")
            out.append(part["text"])
        return "".join(out)
    raise WireError(f"{where} must be a string or a list of text parts")


def _messages(body: dict[str, Any], max_items: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise WireError("'instructions' must be a string")
        msgs.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        return msgs + [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise WireError("'input' must be a string or a list of items")
    if len(items) > max_items:  # checked before translating: the chat form is checked again after
        raise TooMany(f"'input' has {len(items)} items; this gateway takes at most {max_items}")
    for i, item in enumerate(items):
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind == "message":
            if item.get("role") not in MESSAGE_ROLES:
                raise WireError(f"input[{i}].role must be one of {MESSAGE_ROLES}")
            msgs.append({"role": item["role"], "content": _text(item.get("content"), f"input[{i}].content")})
        elif kind == "function_call":
            name, args, cid = item.get("name"), item.get("arguments", ""), item.get("call_id")
            if not isinstance(name, str) or not isinstance(args, str) or not isinstance(cid, str):
                raise WireError(f"input[{i}] (function_call) needs call_id, name and arguments (a JSON string)")
            call = {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            last = msgs[-1] if msgs else None
            if last is not None and last["role"] == "assistant":  # its text, or earlier calls of the same reply
                last.setdefault("tool_calls", []).append(call)
            else:
                msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            cid, output = item.get("call_id"), item.get("output")
            if not isinstance(cid, str):
                raise WireError(f"input[{i}] (function_call_output) needs a call_id")
            msgs.append({"role": "tool", "tool_call_id": cid, "content": _text(output, f"input[{i}].output")})
        elif kind == "reasoning":
            continue
        else:
            raise WireError(f"input[{i}]: item type {kind!r} is not served (message, function_call, "
                            "function_call_output, reasoning)")
    return msgs


def to_chat(body: Any, *, max_messages: int = MAX_MESSAGES, max_tools: int = MAX_TOOLS) -> dict[str, Any]:
    """The Responses request `body` as a checked chat-completions body (module docstring)."""
    if not isinstance(body, dict):
        raise WireError("the body must be a JSON object")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise WireError("'tools' must be a list")
    if tools and len(tools) > max_tools:
        raise TooMany(f"'tools' has {len(tools)} entries; this gateway takes at most {max_tools}")
    chat: dict[str, Any] = {"model": body.get("model"), "messages": _messages(body, max_messages)}
    fn_tools = []
    for i, t in enumerate(tools or []):
        if not isinstance(t, dict):
            raise WireError(f"tools[{i}] must be an object")
        if t.get("type") != "function":
            continue  # a built-in tool (web_search, ...): nothing here can run it
        if not isinstance(t.get("name"), str):
            raise WireError(f"tools[{i}] (function) needs a name")
        fn = {k: t[k] for k in ("name", "description", "parameters", "strict") if k in t}
        fn_tools.append({"type": "function", "function": fn})
    if fn_tools:
        chat["tools"] = fn_tools
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function":  # Responses names it flat
        choice = {"type": "function", "function": {"name": choice.get("name")}}
    for key, value in (("tool_choice", choice), ("max_tokens", body.get("max_output_tokens")),
                       ("temperature", body.get("temperature")), ("top_p", body.get("top_p")),
                       ("stream", body.get("stream"))):
        if value is not None:
            chat[key] = value
    return check_request(chat, max_messages=max_messages, max_tools=max_tools)


def _output(call_id: str, reply: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if reply.content:
        out.append({"type": "message", "id": f"msg_{call_id}", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": reply.content, "annotations": []}]})
    for i, c in enumerate(reply.tool_calls):
        out.append({"type": "function_call", "id": f"fc_{call_id}_{i}", "status": "completed", "call_id": c["id"],
                    "name": c["function"]["name"], "arguments": c["function"].get("arguments", "")})
    return out


def response_json(call_id: str, model: str, reply: Any, *, status: str | None = None) -> dict[str, Any]:
    """The whole `response` object of an answered call (`status`: in_progress while streaming)."""
    cut = reply.finish_reason == "length"
    done = status is None
    return {"id": f"resp_{call_id}", "object": "response", "created_at": int(time.time()), "model": model,
            "status": ("incomplete" if cut else "completed") if done else status,
            "incomplete_details": {"reason": "max_output_tokens"} if cut and done else None,
            "error": None, "output": _output(call_id, reply) if done else [],
            "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens,
                      "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}} if done else None}


def response_events(call_id: str, model: str, reply: Any) -> list[dict[str, Any]]:
    """The streamed answer: created, each output item (added, its text part or arguments, done),
    completed (incomplete for a reply cut at its length)."""
    events: list[dict[str, Any]] = [{"type": "response.created",
                                     "response": response_json(call_id, model, reply, status="in_progress")}]
    for index, item in enumerate(_output(call_id, reply)):
        events.append({"type": "response.output_item.added", "output_index": index,
                       "item": {**item, "status": "in_progress"} | (
                           {"content": []} if item["type"] == "message" else {"arguments": ""})})
        if item["type"] == "message":
            part = item["content"][0]
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            events += [{"type": "response.content_part.added", **where, "part": {**part, "text": ""}},
                       {"type": "response.output_text.delta", **where, "delta": part["text"]},
                       {"type": "response.output_text.done", **where, "text": part["text"]},
                       {"type": "response.content_part.done", **where, "part": part}]
        else:
            events.append({"type": "response.function_call_arguments.done", "item_id": item["id"],
                           "output_index": index, "arguments": item["arguments"]})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    final = response_json(call_id, model, reply)
    events.append({"type": "response.incomplete" if final["status"] == "incomplete" else "response.completed",
                   "response": final})
    for n, e in enumerate(events):
        e["sequence_number"] = n
    return events


__all__ = ["response_events", "response_json", "to_chat"]
