"""Aider (aider-chat 0.86.2), the real program, as a black-box harness: `diff` edit format.

The program gets the task as its one message (`--message-file`), the workspace's files added
to its chat, and no git; it sends one request, applies the SEARCH/REPLACE blocks of the reply,
lints the files it edited and, when a block fails or lint finds errors, sends up to three
reflections before it exits (its own control logic, unchanged; program.py runs it). It never
runs shell commands, so tasks that need a shell are out of its scope, as for our `aider`.

This module renders the scripted policies' intents in Aider's syntax: the oracle writes every
edit of its plan as SEARCH/REPLACE blocks in the first reply (Aider takes one reply, then
reflections), through the renderer our own `aider` style uses; noop answers with no blocks.
"""

from __future__ import annotations

import posixpath
from typing import Any, ClassVar

from harnessrl.harness._common import WORKDIR, resolve, shown

from harnessrl.harness.aider import AiderHarness
from harnessrl.harness.base import HarnessSpec, Intent, Session, register_style
from harnessrl.harness.program import ProgramHarness, ProgramSession

MAX_CHAT_FILES = 64  # files added to the chat; a larger workspace is cut (the model can still name others)


class AiderCliSession(ProgramSession):
    aider_root = WORKDIR

    def launch_options(self) -> dict[str, Any]:
        files = [p for p in self.env.workspace.files() if not p.startswith(".")][:MAX_CHAT_FILES]
        # without git, Aider's root is the common folder of the files in its chat (aider.utils.find_common_root),
        # and the paths of edit blocks are relative to it: /app/plugins when every file is under plugins/
        absolute = [posixpath.join(WORKDIR, f) for f in files]
        if len(absolute) == 1:
            self.aider_root = posixpath.dirname(absolute[0])
        elif absolute:
            self.aider_root = posixpath.commonpath(absolute)
        return {"files": files}


@register_style
class AiderCliHarness(ProgramHarness):
    style = "aider_cli"
    default_program = "aider-cli"
    all_tools: ClassVar[tuple[str, ...]] = ("edit",)
    tool_capabilities: ClassVar[dict[str, frozenset[str]]] = {"edit": frozenset({"edit"})}
    session_class = AiderCliSession

    def __init__(self, spec: HarnessSpec):
        super().__init__(spec)
        self._blocks = AiderHarness(HarnessSpec(id=f"{spec.id}-render", style="aider"))

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        return self.render_turn([intent], session)[0]

    def render_turn(self, intents: list[Intent], session: Session | None) -> tuple[str, int]:
        text, used = self._blocks.render_turn(intents, session)
        root = getattr(session, "aider_root", WORKDIR)
        if root != WORKDIR:  # name each file as Aider does: relative to its root
            for path in {i.args["path"] for i in intents[:used] if "path" in i.args}:
                named = posixpath.relpath(shown(resolve(path) or ""), root)
                text = text.replace(f"{path}\n{self._blocks.fence}\n<<<<<<< SEARCH", f"{named}\n{self._blocks.fence}\n<<<<<<< SEARCH")
        return text, used

    def expressible(self, intent: Intent) -> bool:
        return self._blocks.expressible(intent)
