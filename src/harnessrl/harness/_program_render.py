"""The one renderer of scripted intents (the oracle's, its faulty variants', the attacks') into a
real program's tool calls, driven by the program's tool table (harnessrl.programs.base.ToolTable).

    text, used = render_turn(table, intents, session, style)     # one call per reply

A table entry's string arguments are templates over these values of the intent:

    given      the path as the intent names it            q_given   the same, shell-quoted
    path       the path made absolute under /app            q_path    /app/<path>, shell-quoted
    q_parent   the folder of /app/<path>, shell-quoted       mkdir_parent  `mkdir -p DIR && ` unless DIR is /app
    content, old, new, message                             script    `cd /app && echo B64 | base64 -d | bash`
    current    the file's text now ("" when absent)         b64_text  base64 of the file's whole new text
                                                                      (write: content; replace: current with
                                                                      the one replacement made)

A value is computed only when a template names it (a file is read only when needed).
"""

from __future__ import annotations

import base64
import json
import posixpath
import shlex
from typing import Any

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import WORKDIR, absolute, resolve, shown
from harnessrl.harness.base import HarnessSpec, Intent, Session
from harnessrl.programs.base import Entry, Refuse, Say, ToolTable
from harnessrl.programs.mini_swe_agent import reply as mswea_reply  # the `mswea` wire is mini-swe-agent's protocol

STATES = ("new", "empty", "existing")


def tool_call(name: str, args: dict[str, Any]) -> str:
    """One call in the text form the gateway's wire parses into an OpenAI tool call."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "\n</tool_call>"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class _Values(dict):
    """An intent's template values, each computed on first use (module docstring)."""

    def __init__(self, intent: Intent, session: Session | None):
        super().__init__()
        self.intent, self.env = intent, getattr(session, "env", None)
        self.rel = resolve(intent.args.get("path", "")) or ""

    def current(self) -> str | None:
        """The file's text, or None when there is no episode, it is outside /app or absent."""
        if "_current" not in self:
            env = self.env
            self["_current"] = ws.read_text(env, self.rel) if env is not None and self.rel and ws.exists(env, self.rel) else None
        return self["_current"]

    def state(self) -> str:
        text = self.current()
        return "new" if text is None else "empty" if text == "" else "existing"

    def __missing__(self, key: str) -> Any:
        a, kind = self.intent.args, self.intent.kind
        given = str(a.get("path", ""))
        target = shown(self.rel) if self.rel else given
        values = {
            "given": lambda: given, "q_given": lambda: shlex.quote(given), "path": lambda: absolute(given),
            "q_path": lambda: shlex.quote(target), "q_parent": lambda: shlex.quote(shown(posixpath.dirname(self.rel))),
            "mkdir_parent": lambda: (f"mkdir -p {shlex.quote(posixpath.dirname(target))} && "
                                     if posixpath.dirname(target) not in ("", WORKDIR) else ""),
            "content": lambda: a["content"], "old": lambda: a["old"], "new": lambda: a["new"],
            "message": lambda: str(a.get("message", a.get("text", "The task is done."))),
            "script": lambda: f"cd {WORKDIR} && echo {_b64(a['command'])} | base64 -d | bash",
            "current": lambda: self.current() or "",
            "b64_text": lambda: _b64(a["content"] if kind == "write" else (self.current() or "").replace(a["old"], a["new"], 1)),
        }
        if key not in values:
            raise KeyError(key)
        self[key] = values[key]()
        return self[key]


def entry(table: ToolTable, intent: Intent, values: _Values) -> Entry | None:
    """The table's entry for `intent`: `kind:state` when the table names one, else `kind`."""
    named = {k.split(":")[0] for k in table.intents}
    kind = "finish" if intent.kind == "answer" and "answer" not in named else intent.kind
    if any(f"{kind}:{s}" in table.intents for s in STATES):
        found = table.intents.get(f"{kind}:{values.state()}")
        if found is not None:
            return found
    return table.intents.get(kind)


def render(table: ToolTable, item: Entry, values: _Values) -> str:
    if isinstance(item, Refuse):
        raise ValueError(item.message.format_map(values))
    if isinstance(item, Say):
        return item.text.format_map(values)
    args = {k: v.format_map(values) if isinstance(v, str) else v for k, v in item.args.items()}
    if table.wire == "mswea":
        return mswea_reply(item.thought, args["command"])
    return (item.thought + "\n" if item.thought else "") + tool_call(item.tool, args)


def render_intent(table: ToolTable, intent: Intent, session: Session | None, style: str) -> str:
    """One intent as the program's tool call (no preparatory step)."""
    values = _Values(intent, session)
    found = entry(table, intent, values)
    if found is None:
        raise ValueError(f"{style} cannot express a {intent.kind!r} intent")
    return render(table, found, values)


def render_turn(table: ToolTable, intents: list[Intent], session: Session | None, style: str) -> tuple[str, int]:
    """The next reply of a scripted plan, and how many intents it carries out: one call per reply
    (a program may run one reply's calls at the same time, and two edits of one file must not
    race), or a preparatory call (0) that the program's own rules ask for (ToolTable)."""
    intent = intents[0]
    values = _Values(intent, session)
    read = getattr(session, "read_paths", None)  # what the program has read since it last changed (ProgramSession)
    if table.read_before_edit and read is not None:
        if intent.kind == "run":
            read.clear()  # a shell command may change any file
        elif intent.kind == "read":
            read.add(absolute(intent.args["path"]))
        elif intent.kind in ("write", "replace"):
            path = absolute(intent.args["path"])
            if path not in read and values.rel and values.env is not None and ws.exists(values.env, values.rel):
                read.add(path)
                return render(table, table.intents["read"], values), 0
            read.add(path)  # its own edit refreshes what it knows of the file
    if table.mkdir is not None and intent.kind == "write" and values.env is not None:
        parent = posixpath.dirname(values.rel)
        if parent and not ws.exists(values.env, values.rel) and not ws.is_dir(values.env, parent):
            return render(table, table.mkdir, values), 0
    return render_intent(table, intent, session, style), 1


class EditBlocks:
    """The `search_replace` wire (Aider's edit blocks): every edit of a plan in one reply, written by
    the Aider reconstruction's renderer, each file named from Aider's root (programs.aider.root)."""

    def __init__(self, spec_id: str):
        from harnessrl.harness.aider_reconstruction import AiderReconstruction

        self.blocks = AiderReconstruction(HarnessSpec(id=f"{spec_id}-render", style="aider_reconstruction"))

    def render_turn(self, intents: list[Intent], session: Session | None) -> tuple[str, int]:
        from harnessrl.programs.aider import root as aider_root

        text, used = self.blocks.render_turn(intents, session)
        root = aider_root((getattr(session, "launch_opts", None) or {}).get("files"))
        if root != WORKDIR:  # name each file as Aider does: relative to its root
            fence = self.blocks.fence
            for path in {i.args["path"] for i in intents[:used] if "path" in i.args}:
                named = posixpath.relpath(shown(resolve(path) or ""), root)
                text = text.replace(f"{path}\n{fence}\n<<<<<<< SEARCH", f"{named}\n{fence}\n<<<<<<< SEARCH")
        return text, used

    def expressible(self, intent: Intent) -> bool:
        return self.blocks.expressible(intent)
