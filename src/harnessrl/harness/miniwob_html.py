"""miniwob_html: MiniWoB++ pages as an HTML-like element list, actions as command lines.

Observation: the instruction, then one line per visible element, indented by depth, each
actionable element prefixed by its ref (text runs have none):

    [5] <input type="text" id="tt" value="">
    [6] <button id="subbtn" class="secondary-action">Submit</button>

A <select> lists its options. Reply with exactly one action line (other lines are free text):

    CLICK <ref>
    TYPE <ref> "<text>"        (a JSON string: \\" and \\\\ escape)
    PRESS <key>                (Enter, Tab, ArrowDown, a, C-a ...; miniwob's keys only)
    WAIT [<ms>]                (do nothing for ms, default 500, then see the page again)
    STOP

spec.options: time_limit_s, show_instruction (see _miniwob), show_classes (default true).
"""

from __future__ import annotations

import json
import re

from harnessrl.envs.miniwob import Element, Page
from harnessrl.harness._miniwob import MiniWoBHarness, MiniWoBSession, check_key, check_wait, shown_key
from harnessrl.harness._reply import guarded
from harnessrl.harness.base import FormatError, Intent, Session, ToolCall, register_style

# Upper-case only, at the start of a line: prose ("Click the button first") is not an action.
# Leading blanks stop at the line end: `^\s*` would rescan a run of newlines from each of them.
COMMAND = re.compile(r"^[^\S\n]*(CLICK|TYPE|PRESS|WAIT|STOP)\b(.*)$", re.MULTILINE)
REF = r"\[?(\d{1,9})\]?"  # refs are small; a 4,300-digit one never reaches int()
ARGS = {
    "click": re.compile(rf"^\s*{REF}\s*$"),
    "type": re.compile(rf'^\s*{REF}\s+("(?:[^"\\]|\\.)*")\s*$'),
    "press": re.compile(r"^\s*(\S+)\s*$"),
    "wait": re.compile(r"^\s*(\d{1,6})?\s*(?:ms)?\s*$"),
    "stop": re.compile(r"^\s*$"),
}
SYNTAX = {"click": "CLICK <ref>", "type": 'TYPE <ref> "<text>"', "press": "PRESS <key>", "wait": "WAIT [<ms>]",
          "stop": "STOP"}


def _attr(name: str, value: str) -> str:
    return f' {name}="{value}"' if value else ""


def _selected(select: Element | None, text: str) -> bool:
    if select is None:
        return False
    return text in select.value if select.multiple else text == select.value


def element_line(e: Element, show_classes: bool = True, page: Page | None = None) -> list[str]:
    """One element's lines. A select lists its options once: as its own lines for a drop-down,
    as the option elements miniwob already lists for a list box (`multiple`)."""
    indent = "  " * e.depth
    if not e.actionable:
        return [f"{indent}{e.text}"]
    tag, kind = (e.tag.split("_", 1) + [""])[:2]
    attrs = (f' type="{kind}"' if kind else "") + _attr("id", e.id) + (_attr("class", e.classes) if show_classes else "")
    if tag == "select" and e.multiple:
        attrs += " multiple"
    if tag == "option" and page is not None and _selected(page.get(e.parent), e.text):
        attrs += " selected"
    if tag == "input" and kind in ("checkbox", "radio"):
        attrs += " checked" if e.value else ""
    elif tag == "input":
        attrs += f' value="{e.value or ""}"'
    if e.focused:
        attrs += " focused"
    head = f"{indent}[{e.ref}] <{tag}{attrs}>"
    if tag == "select":
        if page is not None and any(c.tag == "option" for c in page.children(e.ref)):
            return [head]  # the options follow as elements with refs
        return [head] + [f"{indent}  <option{' selected' if _selected(e, o) else ''}>{o}</option>" for o in e.options]
    if tag == "input":
        return [head]
    if tag == "textarea":
        return [f"{head}{e.value or ''}</textarea>"]
    return [f"{head}{e.text}</{tag}>" if e.text or e.is_leaf else head]


def page_text(page: Page, show_classes: bool = True) -> str:
    return "\n".join(line for e in page.elements for line in element_line(e, show_classes, page))


@register_style
class MiniWoBHtmlHarness(MiniWoBHarness):
    style = "miniwob_html"

    def render_page(self, session: MiniWoBSession) -> str:
        body = page_text(session.page, bool(self.spec.options.get("show_classes", True)))
        return f"{self.instruction_line(session)}Page:\n{body}"

    @guarded
    def parse(self, text: str) -> list[ToolCall] | FormatError:
        found = [(m.group(1).lower(), m.group(2)) for m in COMMAND.finditer(text)]
        allowed = " | ".join(SYNTAX[t] for t in self.tools)
        if not found:
            return FormatError(f"no action found. Reply with exactly one action line: {allowed}")
        if len(found) > 1:
            return FormatError(f"{len(found)} action lines found; give exactly one action per reply")
        name, rest = found[0]
        if name not in self.tools:
            return FormatError(f"{name.upper()} is not available here; use {allowed}")
        m = ARGS[name].match(rest)
        if m is None:
            return FormatError(f"malformed {name.upper()}: expected `{SYNTAX[name]}`")
        if name == "click":
            return [ToolCall("click", {"ref": int(m.group(1))})]
        if name == "type":
            try:
                typed = json.loads(m.group(2))
            except ValueError as err:
                return FormatError(f"the text of TYPE is not a valid quoted string: {getattr(err, 'msg', err)}")
            return [ToolCall("type", {"ref": int(m.group(1)), "text": typed})]
        if name == "press":
            bad = check_key(m.group(1))
            return bad if bad is not None else [ToolCall("press", {"key": m.group(1)})]
        if name == "wait":
            args = {"ms": int(m.group(1))} if m.group(1) else {}
            bad = check_wait(args["ms"]) if args else None
            return bad if bad is not None else [ToolCall("wait", args)]
        return [ToolCall("stop", {})]

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        a = intent.args
        if intent.kind == "click":
            return f"CLICK {a['ref']}"
        if intent.kind == "type":
            return f"TYPE {a['ref']} {json.dumps(a['text'], ensure_ascii=False)}"
        if intent.kind == "keys":
            return f"PRESS {shown_key(a['keystrokes'])}"
        if intent.kind == "wait":
            return f"WAIT {a['ms']}"
        if intent.kind == "finish":
            return "STOP"
        raise ValueError(f"miniwob_html cannot express a {intent.kind!r} intent")
