"""opencode (the npm package opencode-ai 1.18.33), the real program, as a black-box harness:
OpenAI tool calls over Chat Completions.

The program gets the task on stdin (`opencode run --title episode --auto`), sends its own
system prompt and tool schemas (bash, edit, glob, grep, read, skill, task, todowrite, write),
runs each tool call itself (shell commands in /app; file tools on absolute paths) and ends at
the first reply with no tool call (program.py runs it, agents/launch.py starts it). A titled
session makes no title-generation call, so every call is the main line.

The policy writes tool calls Hermes-style (`<tool_call>{"name", "arguments"}</tool_call>`,
what the gateway's wire turns into OpenAI `tool_calls`), so this module renders the scripted
policies' intents as calls of opencode's own tools, one call per reply:

    write   -> write{filePath, content}
    replace -> edit{filePath, oldString, newString}
    run     -> bash{command, description}: the script base64-encoded and piped to bash
    read    -> read{filePath}
    finish  -> a reply with no tool call (noop's only reply)

Unlike Qwen Code, opencode 1.18.33 edits and overwrites a file it has not read (measured with a
canned endpoint: an `edit` and a `write` of an unread existing file both succeed), so no read
precedes an edit.
"""

from __future__ import annotations

import base64
from typing import ClassVar

from harnessrl.harness._common import absolute
from harnessrl.harness.base import Intent, Session, register_style
from harnessrl.harness.program import ProgramHarness
from harnessrl.harness.qwen_code_cli import tool_call


@register_style
class OpencodeCliHarness(ProgramHarness):
    style = "opencode_cli"
    default_program = "opencode-cli"
    all_tools: ClassVar[tuple[str, ...]] = ("bash", "write", "edit", "read")
    tool_capabilities: ClassVar[dict[str, frozenset[str]]] = {
        "bash": frozenset({"shell", "edit"}), "write": frozenset({"edit"}), "edit": frozenset({"edit"}),
        "read": frozenset()}

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        a = intent.args
        if intent.kind in ("finish", "answer"):
            return str(a.get("message", a.get("text", "The task is done.")))
        if intent.kind == "write":
            return tool_call("write", {"filePath": absolute(a["path"]), "content": a["content"]})
        if intent.kind == "replace":
            return tool_call("edit", {"filePath": absolute(a["path"]), "oldString": a["old"], "newString": a["new"]})
        if intent.kind == "run":
            script = base64.b64encode(a["command"].encode()).decode()
            return tool_call("bash", {"command": f"cd /app && echo {script} | base64 -d | bash",
                                      "description": "Run the script"})
        if intent.kind == "read":
            return tool_call("read", {"filePath": absolute(a["path"])})
        raise ValueError(f"opencode_cli cannot express a {intent.kind!r} intent")
