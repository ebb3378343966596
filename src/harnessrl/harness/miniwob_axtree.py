"""miniwob_axtree: MiniWoB++ pages as Chromium's accessibility tree, actions as JSON tool calls.

Observation: the instruction, then the page's accessibility tree (Chromium's own, via
DevTools), one node per line, indented by depth; nodes an action can target carry their ref:

    RootWebArea "Click Checkboxes Task"
      [6] checkbox "AU" checked=false
      [9] button "Submit"

Nameless layout containers are left out (their children move up); a node whose only child is
its text shows that text as its name. Reply with exactly one tool call (Hermes/Qwen style):

    <tool_call>{"name": "click", "arguments": {"ref": 6}}</tool_call>
    <tool_call>{"name": "type", "arguments": {"ref": 5, "text": "hello"}}</tool_call>
    <tool_call>{"name": "press", "arguments": {"key": "Enter"}}</tool_call>
    <tool_call>{"name": "wait", "arguments": {"ms": 500}}</tool_call>    (ms optional, default 500)
    <tool_call>{"name": "stop", "arguments": {}}</tool_call>

spec.options: time_limit_s, show_instruction (see _miniwob).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from harnessrl.envs.miniwob import AXNode
from harnessrl.harness._miniwob import MiniWoBHarness, MiniWoBSession, check_key, check_wait, shown_key
from harnessrl.harness._reply import call_spans, guarded, json_error, loads
from harnessrl.harness.base import FormatError, Intent, Session, ToolCall, register_style

PARAMS = {"click": {"ref": int}, "type": {"ref": int, "text": str}, "press": {"key": str}, "wait": {"ms": int}, "stop": {}}
OPTIONAL = {"wait": {"ms"}}
CONTAINERS = ("generic", "none", "LabelText", "paragraph", "Section", "group")
SHOWN_PROPS = ("checked", "selected", "expanded", "focused", "disabled")


@dataclass
class _Node:
    ax: AXNode
    name: str
    children: list[_Node] = field(default_factory=list)


def _tree(nodes: list[AXNode]) -> list[_Node]:
    """Preorder nodes with depths -> a forest."""
    roots: list[_Node] = []
    stack: list[tuple[int, _Node]] = []
    for ax in nodes:
        node = _Node(ax, ax.name)
        while stack and stack[-1][0] >= ax.depth:
            stack.pop()
        (stack[-1][1].children if stack else roots).append(node)
        stack.append((ax.depth, node))
    return roots


def _lines(nodes: list[_Node], depth: int, out: list[str]) -> None:
    for node in nodes:
        ax, children = node.ax, node.children
        if not node.name and len(children) == 1 and children[0].ax.role == "StaticText" and not children[0].children:
            node.name, children = children[0].name, []  # a link/span showing just its text
        if ax.role in CONTAINERS and not node.name and children:
            _lines(children, depth, out)  # layout only: its children move up
            continue
        parts = [f"[{ax.ref}]"] if ax.ref is not None else []
        parts.append(ax.role)  # an SVG shape's role is its shape ("svg-circle"), not Chromium's "image"
        if node.name:
            parts.append(json.dumps(node.name, ensure_ascii=False))
        if ax.value:
            parts.append(f"value={json.dumps(ax.value, ensure_ascii=False)}")
        parts.extend(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in ax.attrs)
        for key, value in ax.properties:
            if key == "checked" or (key in SHOWN_PROPS and value not in (None, False, "false")):
                parts.append(f"{key}={str(value).lower()}")
        out.append("  " * depth + " ".join(parts))
        _lines(children, depth + 1, out)


def tree_text(nodes: list[AXNode]) -> str:
    out: list[str] = []
    _lines(_tree(nodes), 0, out)
    return "\n".join(out)


@register_style
class MiniWoBAXTreeHarness(MiniWoBHarness):
    style = "miniwob_axtree"

    def render_page(self, session: MiniWoBSession) -> str:
        tree = tree_text(session.env.accessibility_tree())
        return f"{self.instruction_line(session)}Accessibility tree:\n{tree}"

    @guarded
    def parse(self, text: str) -> list[ToolCall] | FormatError:
        blocks = [text[start:end] for start, end in call_spans(text, "<tool_call>", "</tool_call>")]
        tools = ", ".join(self.tools)
        if not blocks:
            return FormatError(f'no <tool_call>...</tool_call> found. Call one tool ({tools}) as '
                               '<tool_call>{"name": "click", "arguments": {"ref": 6}}</tool_call>')
        if len(blocks) > 1:
            return FormatError(f"{len(blocks)} tool calls found; make exactly one per reply")
        try:
            call = loads(blocks[0])
        except ValueError as err:
            return FormatError(f"the tool call is not valid JSON: {json_error(err)}")
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return FormatError('a tool call is a JSON object {"name": ..., "arguments": {...}}')
        name, args = call["name"], call.get("arguments", {})
        if name not in self.tools:
            return FormatError(f"unknown tool {name!r}; available: {tools}")
        if not isinstance(args, dict):
            return FormatError(f"the arguments of {name} must be a JSON object")
        params = PARAMS[name]
        extra, missing = set(args) - set(params), set(params) - set(args) - OPTIONAL.get(name, set())
        if extra or missing:
            return FormatError(f"{name} takes {sorted(params) or 'no arguments'}"
                               + (f"; missing {sorted(missing)}" if missing else "")
                               + (f"; unexpected {sorted(extra)}" if extra else ""))
        for key, typ in params.items():
            if key not in args:
                continue  # an optional argument left out
            ok = isinstance(args[key], typ) and not isinstance(args[key], bool)
            if not ok:
                return FormatError(f"{name}.{key} must be {'an integer' if typ is int else 'a string'}")
        bad = check_key(args["key"]) if name == "press" else check_wait(args["ms"]) if "ms" in args else None
        return bad if bad is not None else [ToolCall(name, dict(args))]

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        a = intent.args
        if intent.kind == "click":
            name, args = "click", {"ref": a["ref"]}
        elif intent.kind == "type":
            name, args = "type", {"ref": a["ref"], "text": a["text"]}
        elif intent.kind == "keys":
            name, args = "press", {"key": shown_key(a["keystrokes"])}
        elif intent.kind == "wait":
            name, args = "wait", {"ms": a["ms"]}
        elif intent.kind == "finish":
            name, args = "stop", {}
        else:
            raise ValueError(f"miniwob_axtree cannot express a {intent.kind!r} intent")
        return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "\n</tool_call>"
