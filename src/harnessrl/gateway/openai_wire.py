"""The OpenAI chat-completions wire format: the fields a gateway checks, and the responses it writes.

Requests (`check_request`): `messages` (system/developer/user/assistant/tool; content a string,
null, or a list of text parts), `tools` (function tools), `tool_choice`, `stop`, `max_tokens` /
`max_completion_tokens`, `temperature`, `top_p`, `n` (1 only), `stream`, `stream_options`, `model`.
`messages` and `tools` have at most `max_messages` / `max_tools` entries (`TooMany`).
Unknown fields are kept and ignored, as providers do. A field of the wrong type raises
`WireError` naming it; the gateway answers 400.

Responses: `completion_json` (one `chat.completion` object) and `sse_chunks` (the
`chat.completion.chunk` objects of a stream: role, content, tool calls, finish, then usage
when the program asked for it with `stream_options.include_usage`).
"""

from __future__ import annotations

import time
from typing import Any

ROLES = ("system", "developer", "user", "assistant", "tool")
MAX_MESSAGES = 10_000  # the gateway passes its Limits; these are the defaults (limits.py)
MAX_TOOLS = 512


class WireError(ValueError):
    """A request field that is not what the OpenAI API takes."""

    kind = "malformed"  # the refusal count it adds to (limits.RefusalLog)


class TooMany(WireError):
    """A list with more entries than the gateway's limits take."""

    kind = "too_many"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _entries(body: dict[str, Any], name: str, cap: int, *, required: bool) -> list[Any]:
    v = body.get(name)
    if v is None and not required:
        return []
    if not isinstance(v, list) or (required and not v):
        raise WireError(f"'{name}' must be a {'non-empty ' if required else ''}list")
    if len(v) > cap:
        raise TooMany(f"'{name}' has {len(v)} entries; this gateway takes at most {cap}")
    return v


def check_request(body: Any, *, max_messages: int = MAX_MESSAGES, max_tools: int = MAX_TOOLS) -> dict[str, Any]:
    """The body, checked (module docstring); raises WireError naming the first bad field.

    Every field something downstream reads is checked for its shape here, before the call is
    admitted: a wrong shape found later would crash the HTTP thread (no answer), or the session
    after it recorded the call."""
    if not isinstance(body, dict):
        raise WireError("the body must be a JSON object")
    if body.get("model") is not None and not isinstance(body["model"], str):
        raise WireError("'model' must be a string")
    for i, m in enumerate(_entries(body, "messages", max_messages, required=True)):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise WireError(f"messages[{i}] must be an object with a role in {ROLES}")
        text_of(m.get("content"), f"messages[{i}].content")
        calls = m.get("tool_calls")
        if calls is not None:
            if m["role"] != "assistant" or not isinstance(calls, list):
                raise WireError(f"messages[{i}].tool_calls must be a list on an assistant message")
            for j, c in enumerate(calls):
                fn = c.get("function") if isinstance(c, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not isinstance(fn.get("arguments", ""), str):
                    raise WireError(f"messages[{i}].tool_calls[{j}] needs function.name and function.arguments (a JSON string)")
    for i, t in enumerate(_entries(body, "tools", max_tools, required=False)):
        fn = t.get("function") if isinstance(t, dict) else None
        if (not isinstance(fn, dict) or t.get("type", "function") != "function" or not isinstance(fn.get("name"), str)
                or not isinstance(fn.get("parameters") or {}, dict)):
            raise WireError(f"tools[{i}] must be {{'type': 'function', 'function': {{'name': ..., "
                            "'parameters': {...}}}")
    choice = body.get("tool_choice")
    if choice is not None and choice not in ("none", "auto", "required") and not (
            isinstance(choice, dict) and isinstance(choice.get("function"), dict)
            and isinstance(choice["function"].get("name"), str)):
        raise WireError("'tool_choice' must be none, auto, required or {'type': 'function', 'function': {'name': ...}}")
    stop = body.get("stop")
    if stop is not None and not isinstance(stop, str) and not (
            isinstance(stop, list) and len(stop) <= 4 and all(isinstance(s, str) for s in stop)):
        raise WireError("'stop' must be a string or a list of at most 4 strings")
    for name in ("max_tokens", "max_completion_tokens"):
        v = body.get(name)
        if v is not None and (not _is_int(v) or v < 1):
            raise WireError(f"'{name}' must be a positive integer")
    for name, hi in (("temperature", 2.0), ("top_p", 1.0)):
        v = body.get(name)
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= hi):
            raise WireError(f"'{name}' must be a number in [0, {hi}]")
    n = body.get("n", 1)
    if n is not None and (not _is_int(n) or n != 1):
        raise WireError("'n' must be 1 (one completion per call)")
    if not isinstance(body.get("stream", False), bool):
        raise WireError("'stream' must be true or false")
    options = body.get("stream_options")
    if options is not None and (not isinstance(options, dict)
                                or not isinstance(options.get("include_usage", False), (bool, type(None)))):
        raise WireError("'stream_options' must be an object, e.g. {'include_usage': true}")
    return body


def text_of(content: Any, where: str = "content") -> str:
    """A message's content as text: a string, null (""), or the text of its text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise WireError(f"{where}: only text parts are served ({{'type': 'text', 'text': ...}})")
            out.append(part["text"])
        return "".join(out)
    raise WireError(f"{where} must be a string, null or a list of text parts")


def requested_sampling(body: dict[str, Any]) -> dict[str, Any]:
    """What the program asked for (recorded; the policy's own settings are what is used)."""
    keys = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "tool_choice", "seed")
    return {k: body[k] for k in keys if k in body}


def call_limits(body: dict[str, Any]) -> tuple[int | None, tuple[str, ...]]:
    """The token cap (`max_completion_tokens`, else `max_tokens`) and stop strings a call asked for."""
    cap = body.get("max_completion_tokens") or body.get("max_tokens")
    stop = body.get("stop")
    stops = (stop,) if isinstance(stop, str) else tuple(stop or ())
    return (int(cap) if cap else None), tuple(s for s in stops if s)


def cut_at_stop(text: str, stop: tuple[str, ...]) -> tuple[str, bool]:
    """`text` up to the earliest stop string (excluded, as providers do); whether one was found."""
    hits = [i for i in (text.find(s) for s in stop) if i >= 0]
    return (text[:min(hits)], True) if hits else (text, False)


def _usage(reply: Any) -> dict[str, int]:
    return {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens}


def completion_json(call_id: str, model: str, reply: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    out = {"id": call_id, "object": "chat.completion", "created": int(time.time()), "model": model,
           "choices": [{"index": 0, "message": message, "logprobs": getattr(reply, "logprobs", None),
                        "finish_reason": reply.finish_reason}],
           "usage": _usage(reply)}
    return _token_fields(out, reply)


def _token_fields(out: dict[str, Any], reply: Any) -> dict[str, Any]:
    """vLLM's `return_token_ids` fields, when the reply carries them (the request asked)."""
    if getattr(reply, "token_ids", None) is not None:
        out["choices"][0]["token_ids"] = reply.token_ids
    if getattr(reply, "prompt_token_ids", None) is not None:
        out["prompt_token_ids"] = reply.prompt_token_ids
    return out


def sse_chunks(call_id: str, model: str, reply: Any, include_usage: bool) -> list[dict[str, Any]]:
    base = {"id": call_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    if reply.content:
        out.append(chunk({"content": reply.content}))
    for i, call in enumerate(reply.tool_calls):
        out.append(chunk({"tool_calls": [{"index": i, **call}]}))
    out.append(chunk({}, reply.finish_reason))
    if include_usage:
        out.append({**base, "choices": [], "usage": _usage(reply)})
    return out
