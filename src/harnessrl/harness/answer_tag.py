"""answer_tag: the minimal harness — one reply, answers in tags, no tools, no feedback.

What an answer means:
  * `<answer path="REL">CONTENT</answer>` — the whole new contents of the file REL (relative
    to /app, or an absolute /app/... path). One leading newline after the opening tag is
    dropped; everything else up to `</answer>` is the file, byte for byte. Several file
    answers may appear; they are written in order.
  * `<answer>SCRIPT</answer>` (no path) — a bash script run once in the sandbox at /app
    (tool `script`; terminal tasks). Its output is recorded but not shown: there is no next turn.
A reply with no answer tag is a format error (the model is told, up to `max_format_errors`
times). After the first reply that parses, the episode ends and the hidden tests decide.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import CodeHarness, CodeSession, resolve
from harnessrl.harness._reply import guarded
from harnessrl.harness.base import FormatError, Intent, Session, StepResult, ToolCall, register_style

#: the rest of an opening tag after `<answer`, matched at one position (never searched)
_HEAD = re.compile(r'\s+path\s*=\s*"([^"]*)"\s*>|\s*>')


def answers(text: str) -> Iterator[tuple[str | None, str]]:
    """(path or None, raw body) of each answer, as the regex
    `<answer(?:\\s+path\\s*=\\s*"([^"]*)")?\\s*>(.*?)</answer>` (DOTALL) finds them, in linear
    time: a lazy body would rescan the rest of the reply from every unclosed `<answer>`."""
    last_close = text.rfind("</answer>")
    at = text.find("<answer")
    while at >= 0:
        head = _HEAD.match(text, at + len("<answer"))
        if head is None or head.end() > last_close:  # no tag here, or no closing tag after it
            at = text.find("<answer", at + 1)
            continue
        close = text.find("</answer>", head.end())
        yield head.group(1), text[head.end():close]
        at = text.find("<answer", close + len("</answer>"))


def _body(raw: str) -> str:
    return raw[1:] if raw.startswith("\n") else raw


class AnswerTagSession(CodeSession):
    def start(self) -> list[dict[str, str]]:
        values = self.prompt_values()
        values["files"] = ws.files_block(self.env, int(self.opt("max_file_chars", 20_000))) if self.opt("show_files", True) else ""
        return self.open_conversation(values)

    def step(self, text: str) -> StepResult:
        calls = self.harness.parse(text)
        if isinstance(calls, FormatError):
            return self.record_format_error(text, calls)
        results, status = [], "ok"
        for call in calls:
            if call.name == "file":
                rel = resolve(call.args["path"])
                if rel is None or rel == "":
                    results.append(f"{call.args['path']}: not a file path under /app; not written")
                    status = "tool_error"
                    continue
                try:
                    ws.write_text(self.env, rel, call.args["content"])
                    results.append(f"wrote {rel}")
                except ws.FileError as err:
                    results.append(f"{rel}: {err}")
                    status = "tool_error"
            else:
                out = self.shell.run(call.args["script"])
                results.append(f"script exit code {out.exit_code} ({out.status})\n{out.stdout}{out.stderr}")
                status = "timeout" if out.status == "timeout" else status
        self.stop("answered")
        return self.end_turn(text, "", tool_calls=calls, tool_result="\n".join(results), status=status, done=True)


@register_style
class AnswerTagHarness(CodeHarness):
    style = "answer_tag"
    all_tools = ("file", "script")
    tool_capabilities = {"file": frozenset({"edit"}), "script": frozenset({"shell", "edit"})}
    session_class = AnswerTagSession

    @guarded
    def parse(self, text: str) -> list[ToolCall] | FormatError:
        calls: list[ToolCall] = []
        for path, raw in answers(text):
            body = _body(raw)
            if path is not None:
                if "file" not in self.tools:
                    return FormatError("file answers (<answer path=...>) are not available in this harness")
                calls.append(ToolCall("file", {"path": path, "content": body}))
            else:
                if "script" not in self.tools:
                    return FormatError('a script answer is not available here; give files as <answer path="...">...</answer>')
                calls.append(ToolCall("script", {"script": body}))
        if not calls:
            return FormatError('no <answer>...</answer> found. Put each whole file in <answer path="FILE">...</answer>'
                               + (" or a bash script in <answer>...</answer>" if "script" in self.tools else "") + ".")
        return calls

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        return self._render(intent, session, {})

    def _render(self, intent: Intent, session: Session | None, pending: dict[str, str]) -> str:
        a = intent.args
        if intent.kind == "write":
            pending[a["path"]] = a["content"]
            return f'<answer path="{a["path"]}">\n{a["content"]}</answer>'
        if intent.kind == "replace":
            current = pending.get(a["path"])
            if current is None:
                current = ws.read_text(session.env, resolve(a["path"]) or a["path"])
            new = current.replace(a["old"], a["new"], 1)
            return self._render(Intent("write", path=a["path"], content=new), session, pending)
        if intent.kind == "run":
            return f"<answer>\n{a['command']}</answer>"
        if intent.kind in ("finish", "answer", "read"):
            return ""
        raise ValueError(f"answer_tag cannot express a {intent.kind!r} intent")

    def render_turn(self, intents: list[Intent], session: Session) -> tuple[str, int]:
        """Everything in one reply (there is only one turn); edits to one file between two
        scripts collapse into one answer holding the file's final contents."""
        pending: dict[str, str] = {}
        parts: list[str] = []
        edited: dict[str, None] = {}  # files edited since the last script, in order
        for intent in intents:
            if intent.kind == "run":
                parts += [self._render(Intent("write", path=p, content=pending[p]), session, pending) for p in edited]
                edited.clear()
                parts.append(self._render(intent, session, pending))
            elif intent.kind in ("write", "replace"):
                self._render(intent, session, pending)
                edited[intent.args["path"]] = None
        parts += [self._render(Intent("write", path=p, content=pending[p]), session, pending) for p in edited]
        return "\n\n".join(parts) or "<answer>\n</answer>", len(intents)

    def expressible(self, intent: Intent) -> bool:
        texts = [str(intent.args.get(k, "")) for k in ("content", "command", "new")]
        return not any("</answer>" in t for t in texts) and '"' not in str(intent.args.get("path", ""))
