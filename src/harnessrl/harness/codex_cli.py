"""Codex CLI (the npm package @openai/codex 0.171.0), the real program, as a black-box harness:
function calls over the Responses API.

The program gets the task on stdin (`codex exec -`, its own command sandbox and approvals off),
sends its own instructions (developer messages: its agent prompt, skills, the environment) and
tools (exec_command, write_stdin, request_user_input, view_image, the goal tools) to
`POST /v1/responses`, which the gateway serves by translation (gateway/responses_wire.py), so
the session and the policy see the same chat form as for every other program. It runs each
exec_command itself (`bash -lc CMD` in /app) and ends at the first reply with no function
call, or with exit 1 at a reply cut at its length (the gateway answers it `incomplete`, as the
API does; measured with SmolLM2 at 48 tokens a call). program.py runs it, agents/launch.py
starts it.

Codex has no file-writing tool at this version with an unknown model (no apply_patch tool is
offered), so the scripted policies' intents are shell commands, one call per reply:

    run     -> exec_command{cmd}: the script base64-encoded and piped to bash
    write   -> exec_command{cmd}: the content base64-encoded into the file (its folder made)
    replace -> the same, with the file's whole new text (the workspace's current text with the
               one replacement made), as an edit by shell is written
    read    -> exec_command{cmd: cat FILE}
    finish  -> a reply with no function call (noop's only reply)

`yield_time_ms` asks the program to wait up to a minute for the command before it answers
(by default it answers after a few seconds with a session id to poll, and a test run would
still be going on).
"""

from __future__ import annotations

import base64
import posixpath
import shlex
from typing import ClassVar

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import resolve, shown
from harnessrl.harness.base import Intent, Session, register_style
from harnessrl.harness.program import ProgramHarness
from harnessrl.harness.qwen_code_cli import tool_call

WAIT_MS = 60_000


def _exec(cmd: str) -> str:
    return tool_call("exec_command", {"cmd": cmd, "workdir": "/app", "yield_time_ms": WAIT_MS})


def _write_cmd(path: str, content: str) -> str:
    data = base64.b64encode(content.encode()).decode()
    parent = posixpath.dirname(path)
    mkdir = f"mkdir -p {shlex.quote(parent)} && " if parent not in ("", "/app") else ""
    return f"{mkdir}echo {data} | base64 -d > {shlex.quote(path)}"


@register_style
class CodexCliHarness(ProgramHarness):
    style = "codex_cli"
    default_program = "codex-cli"
    all_tools: ClassVar[tuple[str, ...]] = ("exec_command",)
    tool_capabilities: ClassVar[dict[str, frozenset[str]]] = {"exec_command": frozenset({"shell", "edit"})}

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        a = intent.args
        if intent.kind in ("finish", "answer"):
            return str(a.get("message", a.get("text", "The task is done.")))
        if intent.kind == "run":
            script = base64.b64encode(a["command"].encode()).decode()
            return _exec(f"cd /app && echo {script} | base64 -d | bash")
        rel = resolve(a.get("path", "")) or ""
        path = shown(rel) if rel else a.get("path", "")
        if intent.kind == "read":
            return _exec(f"cat {shlex.quote(path)}")
        if intent.kind == "write":
            return _exec(_write_cmd(path, a["content"]))
        if intent.kind == "replace":
            env = getattr(session, "env", None)
            if env is None or not rel or not ws.exists(env, rel):
                raise ValueError(f"codex_cli renders a replace as the file's new text: {a['path']!r} must exist")
            return _exec(_write_cmd(path, ws.read_text(env, rel).replace(a["old"], a["new"], 1)))
        raise ValueError(f"codex_cli cannot express a {intent.kind!r} intent")
