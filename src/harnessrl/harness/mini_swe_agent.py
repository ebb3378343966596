"""mini-swe-agent (2.4.6), the real program, as a black-box harness: its text protocol.

This is the SWE-agent team's *minimal* agent, not SWE-agent's agent-computer interface (our
`swe_agent` style reconstructs that one): a bash-only loop where every reply holds exactly one
fenced block

    THOUGHT: why.

    ```mswea_bash_command
    the command
    ```

which the program runs in a fresh subshell (cwd /app) and answers with `<returncode>` and
`<output>`; a reply with no block or several is a format error the program sends back itself
(three in a row end its run). It submits when a command's output starts with
`COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`. The program, its prompts and its control logic are its
own (program.py runs it); this module only renders the scripted policies' intents in its
protocol: the oracle writes files with base64 through one block per reply, runs the solution
script the same way, then submits; noop submits at once.
"""

from __future__ import annotations

import base64
import shlex
from typing import ClassVar

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import resolve, shown
from harnessrl.harness.base import Intent, Session, register_style
from harnessrl.harness.program import ProgramHarness

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def reply(thought: str, command: str) -> str:
    """One reply in the text protocol (the command must not hold a line starting with ```)."""
    return f"THOUGHT: {thought}\n\n```mswea_bash_command\n{command}\n```"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@register_style
class MiniSweAgentHarness(ProgramHarness):
    style = "mini_swe_agent"
    default_program = "mini-swe-agent"
    all_tools: ClassVar[tuple[str, ...]] = ("bash",)
    tool_capabilities: ClassVar[dict[str, frozenset[str]]] = {"bash": frozenset({"shell", "edit"})}

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        a = intent.args
        if intent.kind in ("finish", "answer"):
            return reply("The work is done; submitting.", SUBMIT)
        if intent.kind == "run":
            return reply("Run the command.", f"cd /app && echo {_b64(a['command'])} | base64 -d | bash")
        if intent.kind == "read":
            return reply("Look at the file.", f"cat {shlex.quote(a['path'])}")
        if intent.kind in ("write", "replace"):
            rel = resolve(a["path"]) or ""
            if intent.kind == "write":
                content = a["content"]
            else:
                current = ws.read_text(session.env, rel) if session is not None else ""
                content = current.replace(a["old"], a["new"], 1)
            q = shlex.quote(shown(rel))
            return reply("Write the file.", f"mkdir -p \"$(dirname {q})\" && echo {_b64(content)} | base64 -d > {q}")
        raise ValueError(f"mini_swe_agent cannot express a {intent.kind!r} intent")
