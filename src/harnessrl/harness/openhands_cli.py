"""OpenHands (the `openhands` CLI 1.16.0 on openhands-sdk 1.21.0), the real program, as a
black-box harness: headless CodeAct agent, OpenAI tool calls.

The program gets the task as a file (`openhands --headless --file F --always-approve
--override-with-envs`), sends its own system prompt and tool schemas (terminal, file_editor,
task_tracker, task, finish, think), runs each tool call itself (a persistent bash session in
/app; an editor that refuses to `create` over an existing file) and ends on a `finish` call or
a reply without one (program.py runs it, agents/launch.py starts it). Its security analyzer
asks the model to rate each action (`security_risk`: LOW | MEDIUM | HIGH); with
`--always-approve` nothing waits for a confirmation.

The policy writes tool calls Hermes-style (`<tool_call>{"name", "arguments"}</tool_call>`, what
the gateway's wire turns into OpenAI `tool_calls`), so this module renders the scripted
policies' intents as calls of OpenHands' own tools, one per reply (its CodeAct prompt asks for
one action at a time). Reads are rated LOW, changes MEDIUM, as its prompt describes the levels:

    write   -> file_editor create (a new file); str_replace of the whole current text (an
               existing one: `create` refuses to overwrite); insert at line 0 (an empty one)
    replace -> file_editor str_replace{old_str, new_str}
    run     -> terminal{command}: the script base64-encoded and piped to bash, one line
    read    -> file_editor view
    finish  -> finish{message} (noop's only reply)
"""

from __future__ import annotations

import base64
import posixpath
import shlex
from typing import Any, ClassVar

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import absolute, resolve, shown
from harnessrl.harness.base import Intent, Session, register_style
from harnessrl.harness.program import ProgramHarness
from harnessrl.harness.qwen_code_cli import tool_call


@register_style
class OpenHandsCliHarness(ProgramHarness):
    style = "openhands_cli"
    default_program = "openhands-cli"
    all_tools: ClassVar[tuple[str, ...]] = ("terminal", "file_editor", "finish")
    tool_capabilities: ClassVar[dict[str, frozenset[str]]] = {
        "terminal": frozenset({"shell", "edit"}), "file_editor": frozenset({"edit"}), "finish": frozenset()}

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        a = intent.args
        if intent.kind in ("finish", "answer"):
            return tool_call("finish", {"message": str(a.get("message", a.get("text", "The task is done.")))})
        if intent.kind == "run":
            script = base64.b64encode(a["command"].encode()).decode()
            return tool_call("terminal", {"command": f"cd /app && echo {script} | base64 -d | bash",
                                          "security_risk": "MEDIUM", "summary": "run the script"})
        if intent.kind == "read":
            return tool_call("file_editor", {"command": "view", "path": absolute(a["path"]), "security_risk": "LOW",
                                             "summary": "look at the file"})
        edit = self._edit(intent, session)
        if edit is None:
            raise ValueError(f"openhands_cli cannot express a {intent.kind!r} intent")
        return tool_call("file_editor", edit | {"security_risk": "MEDIUM", "summary": "edit the file"})

    def render_turn(self, intents: list[Intent], session: Session) -> tuple[str, int]:
        """One call per reply; a new file in a folder that does not exist yet gets the folder
        first (the editor's `create` does not make parents): a preparatory call, 0 intents used."""
        intent = intents[0]
        rel = (resolve(intent.args.get("path", "")) or "") if intent.kind == "write" else ""
        parent = posixpath.dirname(rel)
        env = getattr(session, "env", None)
        if parent and env is not None and not ws.exists(env, rel) and not ws.is_dir(env, parent):
            return tool_call("terminal", {"command": f"mkdir -p {shlex.quote(shown(parent))}", "security_risk": "LOW",
                                          "summary": "make the folder"}), 0
        return self.render_intent(intent, session), 1

    def _edit(self, intent: Intent, session: Session | None) -> dict[str, Any] | None:
        a = intent.args
        if intent.kind == "replace":
            return {"command": "str_replace", "path": absolute(a["path"]), "old_str": a["old"], "new_str": a["new"]}
        if intent.kind != "write":
            return None
        rel = resolve(a["path"]) or ""
        env = getattr(session, "env", None)
        current = ws.read_text(env, rel) if env is not None and rel and ws.exists(env, rel) else None
        if current is None:
            return {"command": "create", "path": absolute(a["path"]), "file_text": a["content"]}
        if current == "":
            return {"command": "insert", "path": absolute(a["path"]), "insert_line": 0, "new_str": a["content"]}
        return {"command": "str_replace", "path": absolute(a["path"]), "old_str": current, "new_str": a["content"]}
