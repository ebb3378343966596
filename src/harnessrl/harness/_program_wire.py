"""A program's OpenAI call as the text conversation a policy continues, and the policy's text
as the OpenAI answer the program reads.

    messages = to_text(request, issued)          # what the policy sees (strings only)
    reply, parsed = to_reply(text, request, issued)

Tools, for models without a tool template (SmolLM2, the tiny LM), are rendered the Hermes way
our `qwen_code` harness uses: the function signatures inside `<tools>` in the system message,
calls as `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, results as
`<tool_response>` blocks in a user message (consecutive `tool` messages become one).

Token-exactness: the text an assistant turn renders to must be the text the policy generated,
or the policy's incremental encoding restarts (chat.py). A reply with tool calls goes out as
`content` + `tool_calls`, and when the program sends that turn back (ids and arguments
unchanged), `issued` maps the call ids to the generated text, which is rendered instead of a
re-serialisation. Plain replies come back as their content, unchanged.

A reply whose `<tool_call>` does not parse goes back as plain content, as a provider does,
and `to_reply` says so (the session counts it as a format error).
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from harnessrl.gateway import Reply
from harnessrl.gateway.openai_wire import text_of
from harnessrl.harness.base import FormatError
from harnessrl.harness.qwen_code_reconstruction import parse_calls

TOOLS_INTRO = ("\n\n# Tools\n\nYou may call one or more functions. Their signatures are inside <tools></tools>:\n"
               "<tools>\n{tools}\n</tools>\n\nTo call a function, write a JSON object with its name and arguments "
               "inside <tool_call></tool_call> tags:\n<tool_call>\n{{\"name\": <function-name>, \"arguments\": "
               "<args-json-object>}}\n</tool_call>")


def wants_tools(request: dict[str, Any]) -> bool:
    return bool(request.get("tools")) and request.get("tool_choice") != "none"


def tools_block(tools: list[dict[str, Any]]) -> str:
    return TOOLS_INTRO.format(tools="\n".join(json.dumps(t.get("function", t), ensure_ascii=False) for t in tools))


def _call_key(calls: list[dict[str, Any]]) -> str:
    return json.dumps([[c.get("id"), c["function"]["name"], c["function"].get("arguments", "")] for c in calls])


def _render_calls(calls: list[dict[str, Any]]) -> str:
    out = []
    for c in calls:
        try:
            args = json.loads(c["function"].get("arguments") or "{}")
        except ValueError:
            args = c["function"].get("arguments")
        out.append("<tool_call>\n" + json.dumps({"name": c["function"]["name"], "arguments": args}, ensure_ascii=False)
                   + "\n</tool_call>")
    return "\n".join(out)


def render_calls(calls: list[dict[str, Any]]) -> str:
    """OpenAI `tool_calls` as the Hermes text a policy's record shows (forward mode's upstream answers)."""
    return _render_calls(calls)


def upstream_reply(message: dict[str, Any], finish_reason: str | None) -> Reply:
    """An upstream's answer (forward mode: `Action.info["upstream_message"]`) for the program, unchanged."""
    calls = list(message.get("tool_calls") or [])
    finish = "tool_calls" if calls else (finish_reason if finish_reason in ("stop", "length") else "stop")
    return Reply(content=message.get("content"), tool_calls=calls, finish_reason=finish)


def to_text(request: dict[str, Any], issued: dict[str, str]) -> list[dict[str, str]]:
    """The request's messages as role/content strings (module docstring)."""
    out: list[dict[str, str]] = []
    tools = request.get("tools") if wants_tools(request) else None
    for m in request["messages"]:
        role, content = m["role"], text_of(m.get("content"))
        if role == "developer":
            role = "system"
        if role == "tool":
            block = f"<tool_response>\n{content}\n</tool_response>"
            if out and out[-1]["role"] == "user" and out[-1]["content"].startswith("<tool_response>"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block})
            continue
        if role == "assistant" and m.get("tool_calls"):
            key = _call_key(m["tool_calls"]) + "\x00" + content
            content = issued.get(key) or (content + ("\n" if content else "") + _render_calls(m["tool_calls"]))
        out.append({"role": role, "content": content})
    if tools:
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + tools_block(tools)}
        else:
            out.insert(0, {"role": "system", "content": tools_block(tools).lstrip()})
    return out


def to_reply(text: str, request: dict[str, Any], issued: dict[str, str]) -> tuple[Reply, bool]:
    """The policy's text as an OpenAI answer; returns (reply, whether any tool call failed to parse)."""
    if not wants_tools(request) or "<tool_call>" not in text:
        return Reply(content=text), False
    calls = parse_calls(text)
    if isinstance(calls, FormatError) or not calls:
        return Reply(content=text), True
    allowed = {t["function"]["name"] for t in request["tools"]}
    if any(c.name not in allowed for c in calls):
        return Reply(content=text), True
    content = text[:text.index("<tool_call>")].rstrip("\n")
    tool_calls = [{"id": f"call_{secrets.token_hex(12)}", "type": "function",
                   "function": {"name": c.name, "arguments": json.dumps(c.args, ensure_ascii=False)}} for c in calls]
    issued[_call_key(tool_calls) + "\x00" + content] = text
    return Reply(content=content or None, tool_calls=tool_calls, finish_reason="tool_calls"), False
