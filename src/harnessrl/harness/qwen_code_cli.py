"""Qwen Code (@qwen-code/qwen-code 0.24.4), the real program, as a black-box harness: OpenAI tool calls.

The program gets the task as its prompt argument (`qwen "<task>" --approval-mode yolo`), sends
its own system prompt and tool schemas, runs every tool call of a reply itself (shell
commands with `bash -c` in /app, file tools on absolute paths under /app) and ends at the
first reply with no tool call; then, unless `managed_memory` is off, it makes one auxiliary
"memory extraction" call before it exits (program.py runs it, agents/launch.py starts it).

The policy writes tool calls Hermes-style (`<tool_call>{"name", "arguments"}</tool_call>`,
what the gateway's wire turns into OpenAI `tool_calls`), so this module renders the scripted
policies' intents as calls of Qwen Code's own tools, one call per reply (the program may run
the calls of one reply concurrently, and two edits of one file must not race):

    write   -> write_file{file_path, content}
    replace -> edit{file_path, old_string, new_string}
    run     -> run_shell_command{command}: the script is passed base64-encoded and piped to
               bash, so no quoting or `$(...)` of the script meets the program's command checks
    read    -> read_file{absolute_path}
    finish  -> a reply with no tool call (noop's only reply)
"""

from __future__ import annotations

import base64
import json
from typing import Any, ClassVar

from harnessrl.harness._common import resolve, shown
from harnessrl.harness.base import Intent, Session, register_style
from harnessrl.harness.program import ProgramHarness, ProgramSession

#: the parameter naming a file, per tool, at this version of the program (read from its schemas)
PATH_PARAM = {"write_file": "file_path", "edit": "file_path", "read_file": "file_path"}


def tool_call(name: str, args: dict[str, Any]) -> str:
    """One call in the text form the gateway's wire parses into an OpenAI tool call."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "\n</tool_call>"


def _abs(path: str) -> str:
    return path if path.startswith("/") else shown(resolve(path) or "")


class QwenCodeCliSession(ProgramSession):
    def launch_options(self) -> dict[str, Any]:
        return {}


@register_style
class QwenCodeCliHarness(ProgramHarness):
    style = "qwen_code_cli"
    default_program = "qwen-code-cli"
    all_tools: ClassVar[tuple[str, ...]] = ("run_shell_command", "write_file", "edit", "read_file")
    tool_capabilities: ClassVar[dict[str, frozenset[str]]] = {
        "run_shell_command": frozenset({"shell", "edit"}), "write_file": frozenset({"edit"}),
        "edit": frozenset({"edit"}), "read_file": frozenset()}
    session_class = QwenCodeCliSession

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        a = intent.args
        if intent.kind in ("finish", "answer"):
            return str(a.get("message", a.get("text", "The task is done.")))
        if intent.kind == "write":
            return tool_call("write_file", {PATH_PARAM["write_file"]: _abs(a["path"]), "content": a["content"]})
        if intent.kind == "replace":
            return tool_call("edit", {PATH_PARAM["edit"]: _abs(a["path"]), "old_string": a["old"], "new_string": a["new"]})
        if intent.kind == "run":
            script = base64.b64encode(a["command"].encode()).decode()
            return tool_call("run_shell_command", {"command": f"cd /app && echo {script} | base64 -d | bash",
                                                   "description": "Run the script."})
        if intent.kind == "read":
            return tool_call("read_file", {PATH_PARAM["read_file"]: _abs(a["path"])})
        raise ValueError(f"qwen_code_cli cannot express a {intent.kind!r} intent")

    def expressible(self, intent: Intent) -> bool:
        return intent.kind in ("finish", "answer", "run", "read", "write", "replace")

    def view(self) -> dict[str, Any]:
        return {}
