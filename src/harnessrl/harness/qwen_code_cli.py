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
    read    -> read_file{file_path}
    finish  -> a reply with no tool call (noop's only reply)

The program refuses to edit or overwrite a file it has not read in this session (or that
changed since it was read), so an edit of such a file is preceded by a read_file call.
"""

from __future__ import annotations

import base64
import json
from typing import Any, ClassVar

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import absolute, resolve
from harnessrl.harness.base import Intent, Session, register_style
from harnessrl.harness.program import ProgramHarness, ProgramSession

def tool_call(name: str, args: dict[str, Any]) -> str:
    """One call in the text form the gateway's wire parses into an OpenAI tool call."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "\n</tool_call>"


class QwenCodeCliSession(ProgramSession):
    """Remembers which files the scripted reply has had the program read (see `render_turn`)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.read_paths: set[str] = set()


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
            return tool_call("write_file", {"file_path": absolute(a["path"]), "content": a["content"]})
        if intent.kind == "replace":
            return tool_call("edit", {"file_path": absolute(a["path"]), "old_string": a["old"], "new_string": a["new"]})
        if intent.kind == "run":
            script = base64.b64encode(a["command"].encode()).decode()
            return tool_call("run_shell_command", {"command": f"cd /app && echo {script} | base64 -d | bash",
                                                   "description": "Run the script."})
        if intent.kind == "read":
            return tool_call("read_file", {"file_path": absolute(a["path"])})
        raise ValueError(f"qwen_code_cli cannot express a {intent.kind!r} intent")

    def render_turn(self, intents: list[Intent], session: Session) -> tuple[str, int]:
        """One call per reply. The program refuses to edit or overwrite an existing file it has not
        read in this session, or that changed since (its read cache compares mtime and size), so
        an edit of such a file is preceded by a read_file of it (a preparatory call, 0 intents
        used); a shell command may change any file, so after one every file is read again."""
        intent = intents[0]
        read = getattr(session, "read_paths", None)
        if read is not None:
            if intent.kind == "run":
                read.clear()
            elif intent.kind == "read":
                read.add(absolute(intent.args["path"]))
            elif intent.kind in ("write", "replace"):
                path = absolute(intent.args["path"])
                rel = resolve(path)
                env = getattr(session, "env", None)
                if path not in read and rel and env is not None and ws.exists(env, rel):
                    read.add(path)
                    return tool_call("read_file", {"file_path": path}), 0
                read.add(path)  # its own edit refreshes what it knows of the file
        return self.render_intent(intent, session), 1
