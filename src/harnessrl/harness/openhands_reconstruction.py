"""The OpenHands reconstruction (harness id `openhands`, style `openhands_reconstruction`, formerly style
`openhands`): our re-implementation of the CodeAct agent with OpenHands' text function-call format, not
the program (the real OpenHands CLI is the `openhands-cli` program: harnessrl.programs.openhands).

For models without native function calling, a call is written as

    <function=str_replace_editor>
    <parameter=command>str_replace</parameter>
    <parameter=path>/app/calc.py</parameter>
    <parameter=old_str>
    return a - b
    </parameter>
    </function>

Parameter values are taken verbatim except for ONE newline directly after `<parameter=P>`
and ONE directly before `</parameter>` (OpenHands strips all surrounding whitespace; we keep
the rest so file contents round-trip exactly). A missing `</function>` is added (models stop
on it). One call per reply: the first is run. Tools: `execute_bash{command, is_input,
timeout, security_risk}`, `str_replace_editor{command, path, file_text, old_str, new_str,
insert_line, view_range, security_risk}`, `think{thought}`, `finish{message}` — the schema of
OpenHands 0.62.0 (@156d068). `finish.message` is required, as there; `security_risk` (LOW |
MEDIUM | HIGH) is shown as required and recorded with the call, but a call without it is
still run (a deliberate difference: models trained before 0.62 never send it). `think` only logs the thought
("Your thought has been logged."). Results come back as "EXECUTION RESULT of [NAME]:"; bash
results end with the working directory, the interpreter and `[Command finished with exit
code N]`; output is capped at 30,000 characters. A malformed call is an error observation;
a reply with no call gets the "continue, never ask for human help" nudge. Both count as
format errors and use an iteration. A stuck-loop detector ends runs that repeat themselves.
Deviation, stated: each command is its own sandboxed process, so a command that times out is
killed (exit code -1) rather than left running for `is_input`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import CodeHarness, CodeSession, cap_middle, resolve, shown
from harnessrl.harness._oh_editor import Editor, EditorError
from harnessrl.harness._reply import bounded_int, finite_number, guarded, loads
from harnessrl.harness.base import FormatError, Intent, Session, StepResult, ToolCall, register_style

MAX_TIMEOUT_S = 10**6  # larger timeouts are refused as written (the session clamps them to 1..600 s anyway)

#: name -> {param: (type, required)}; types: str, int, bool, float, int_list, or a tuple of allowed strings
#: OpenHands 0.62 asks the model to rate each command and edit (the schema marks it required);
#: the rating is recorded in the call's args (the episode keeps it) and changes nothing here (no
#: confirmation mode). Deliberate difference: a call without it is accepted, as before 0.62.
RISK_LEVELS = ("LOW", "MEDIUM", "HIGH")
SCHEMA: dict[str, dict[str, tuple[Any, bool]]] = {
    "execute_bash": {"command": (str, True), "is_input": (bool, False), "timeout": (float, False),
                     "security_risk": (RISK_LEVELS, False)},
    "str_replace_editor": {"command": (("view", "create", "str_replace", "insert", "undo_edit"), True),
                           "path": (str, True), "file_text": (str, False), "old_str": (str, False),
                           "new_str": (str, False), "insert_line": (int, False), "view_range": ("int_list", False),
                           "security_risk": (RISK_LEVELS, False)},
    "think": {"thought": (str, True)},
    "finish": {"message": (str, True)},
}


def _tags(text: str, name: str) -> Iterator[tuple[str, int, int, int]]:
    """(name, body start, body end, end) of each `<NAME=name>body</NAME>`, left to right, as the
    regex `<NAME=([^>\\n]*)>(.*?)</NAME>` (DOTALL) finds them, in linear time: `str.find` scans,
    and the next `>`/newline is remembered so a run of unclosed `<NAME=` is not rescanned."""
    opening, closing = f"<{name}=", f"</{name}>"
    gt = nl = -1  # the next '>' / newline at or after the current opening; -1: not looked up yet
    at = text.find(opening)
    while at >= 0:
        start = at + len(opening)
        if gt < start:
            gt = text.find(">", start)
            if gt < 0:
                return  # no '>' after this opening, nor after any later one
        if nl < start:
            nl = text.find("\n", start)
            nl = len(text) if nl < 0 else nl
        if nl < gt:  # the name would span a line: no call starts here
            at = text.find(opening, at + 1)
            continue
        end = text.find(closing, gt + 1)
        if end < 0:
            return
        yield text[start:gt], gt + 1, end, end + len(closing)
        at = text.find(opening, end + len(closing))


def _value(raw: str) -> str:
    raw = raw[1:] if raw.startswith("\n") else raw
    return raw[:-1] if raw.endswith("\n") else raw


def _convert(fn: str, name: str, value: str, kind: Any) -> Any:
    if isinstance(kind, tuple):
        if value not in kind:
            raise ValueError(f"Parameter '{name}' of function '{fn}' must be one of {list(kind)}, got {value!r}")
        return value
    invalid = ValueError(f"Parameter '{name}' of function '{fn}' has an invalid value {_short(value)}")
    if kind is int:  # line numbers: at most 10 digits, never a 4,300-digit int()
        number = bounded_int(value, -10**9, 10**9)
        if number is None:
            raise invalid
        return number
    if kind is float:  # seconds: a finite number in range, never inf or an OverflowError
        try:
            number = finite_number(float(value.strip()), -MAX_TIMEOUT_S, MAX_TIMEOUT_S)
        except ValueError:
            number = None
        if number is None:
            raise ValueError(f"Parameter '{name}' of function '{fn}' must be a finite number of seconds of at most "
                             f"{MAX_TIMEOUT_S:,}, got {_short(value)}")
        return number
    if kind is bool:
        if value.strip().lower() not in ("true", "false"):
            raise invalid
        return value.strip().lower() == "true"
    if kind == "int_list":
        try:
            out = loads(value)  # depth- and size-limited: `[[[[...` is a format error, not a RecursionError
        except ValueError:
            raise invalid from None
        if not (isinstance(out, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in out)):
            raise invalid
        return out
    return value


def _short(value: str, limit: int = 200) -> str:
    """A value quoted for an error message, cut so a huge value does not flood the observation."""
    return repr(value) if len(value) <= limit else repr(value[:limit]) + f"... ({len(value):,} characters)"


def parse_call(text: str, tools: tuple[str, ...]) -> list[ToolCall] | FormatError:
    if not isinstance(text, str):
        return FormatError("no function call")
    if "<function=" in text and "</function>" not in text:
        text += "</function>"
    m = next(_tags(text, "function"), None)
    if m is None:
        return FormatError("no function call")
    fn, body_start, body_end, _ = m
    fn = fn.strip()
    if fn not in SCHEMA or fn not in tools:
        return FormatError(f"Function {_short(fn)} is not among the available tools: {', '.join(tools)}")
    body = text[body_start + 1 if text.startswith("\n", body_start) else body_start:body_end]
    args: dict[str, Any] = {}
    for name, start, end, _ in _tags(body, "parameter"):
        name = name.strip()
        if name not in SCHEMA[fn]:
            return FormatError(f"Parameter {_short(name)} is not allowed for function '{fn}'; allowed: {', '.join(SCHEMA[fn])}")
        if name in args:
            return FormatError(f"Parameter '{name}' is given twice in the call to '{fn}'")
        try:
            args[name] = _convert(fn, name, _value(body[start:end]), SCHEMA[fn][name][0])
        except ValueError as err:
            return FormatError(str(err))
    missing = [p for p, (_, req) in SCHEMA[fn].items() if req and p not in args]
    if missing:
        return FormatError(f"Missing required parameters for function '{fn}': {', '.join(missing)}")
    return [ToolCall(fn, args)]


def render_call(name: str, args: dict[str, Any]) -> str:
    lines = [f"<function={name}>"]
    for key, value in args.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, list):
            value = json.dumps(value)
        value = str(value)
        lines.append(f"<parameter={key}>\n{value}\n</parameter>" if "\n" in value or value != value.strip()
                     else f"<parameter={key}>{value}</parameter>")
    return "\n".join(lines + ["</function>"])


class OpenHandsSession(CodeSession):
    harness: "OpenHandsReconstruction"

    def start(self) -> list[dict[str, str]]:
        self.editor = Editor(self.env, self.shell)
        self.recent: list[tuple[str, str, bool]] = []  # (call, observation, was_error) for the stuck detector
        values = self.prompt_values() | {"tool_docs": self.harness.tool_docs()}
        return self.open_conversation(values)

    def step(self, text: str) -> StepResult:
        calls = self.harness.parse(text)
        if isinstance(calls, FormatError):
            nudge = calls.message == "no function call"
            obs = self.opt("nudge", "") if nudge else f"EXECUTION RESULT of [error]:\n{calls.message}"
            result = self.record_format_error(text, FormatError(calls.message))
            self.messages[-1]["content"] = obs  # the style's own wording replaces the generic one
            result.observation = obs
            self.turn += 1  # every agent step is an iteration in OpenHands
            if not self.done and self.turn >= self.harness.spec.max_turns:
                self.stop("max_iterations", "turn_limit")
            elif self._stuck(text, obs, True):  # the same malformed reply again and again
                self.stop("stuck_in_loop", "format_error")
            result.done = self.done
            return result
        call = calls[0]
        status, done = "ok", False
        if call.name == "think":  # OpenHands answers a thought with a fixed acknowledgement
            obs = "EXECUTION RESULT of [think]:\nYour thought has been logged."
            done = self._stuck(render_call(call.name, call.args), obs, False)
            if done:
                self.stop("stuck_in_loop")
            return self.end_turn(text, obs, tool_calls=[call], tool_result="Your thought has been logged.", done=done)
        if call.name == "finish":
            self.stop("finish")
            return self.end_turn(text, "", tool_calls=[call], tool_result=call.args.get("message", ""), done=True)
        if call.name == "execute_bash":
            content, status = self._bash(call.args)
        else:
            try:
                content = self.editor(call.args)
            except EditorError as err:
                content, status = f"ERROR:\n{err}", "tool_error"
            except ws.FileError as err:
                content, status = f"ERROR:\n{err}", "tool_error"
        content = cap_middle(content, self.harness.spec.max_observation_chars,
                             "<response clipped><NOTE>{n} characters of this output were cut to save context.</NOTE>")
        obs = f"EXECUTION RESULT of [{call.name}]:\n{content}"
        if self._stuck(render_call(call.name, call.args), obs, status != "ok"):
            self.stop("stuck_in_loop")
            done = True
        return self.end_turn(text, obs, tool_calls=[call], tool_result=content, status=status, done=done)

    def _bash(self, args: dict[str, Any]) -> tuple[str, str]:
        if args.get("is_input"):
            return "ERROR: No previous running command to interact with.", "tool_error"
        if not args["command"].strip():
            return "ERROR: No previous running command to retrieve logs from.", "tool_error"
        timeout = float(args.get("timeout") or self.harness.spec.command_timeout_s)
        timeout = min(max(1.0, timeout), float(self.opt("max_command_timeout_s", 600)))
        out = self.shell.run(args["command"], timeout=timeout)
        body = out.stdout + out.stderr
        code = out.exit_code if out.exit_code is not None else -1
        status = "ok"
        if out.status == "timeout":
            code, status = -1, "timeout"
            body += f"\n[The command timed out after {timeout:g} seconds and was stopped. Run it in the background or with a shorter workload.]"
        return (f"{body.rstrip()}\n[Current working directory: {self.shell.cwd}]\n"
                f"[Python interpreter: {ws.python(self.env)}]\n[Command finished with exit code {code}]"), status

    def _stuck(self, call: str, obs: str, error: bool) -> bool:
        self.recent = (self.recent + [(call, obs, error)])[-4:]
        same = [r for r in self.recent if r[:2] == (call, obs)]
        return len(same) == 4 or (error and len(self.recent) >= 3 and all(r[:2] == (call, obs) for r in self.recent[-3:]))


@register_style
class OpenHandsReconstruction(CodeHarness):
    style = "openhands_reconstruction"
    all_tools = ("execute_bash", "str_replace_editor", "think", "finish")
    tool_capabilities = {"execute_bash": frozenset({"shell", "edit"}), "str_replace_editor": frozenset({"edit"})}
    session_class = OpenHandsSession

    def tool_docs(self) -> str:
        docs = self.spec.options.get("tool_docs", {})
        return "\n\n".join(docs[t] for t in self.tools if t in docs)

    @guarded
    def parse(self, text: str) -> list[ToolCall] | FormatError:
        return parse_call(text, self.tools)

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        a = intent.args
        path = lambda p: shown(resolve(p) or "") if not p.startswith("/") else p  # noqa: E731
        # the oracle rates reads LOW and changes MEDIUM, as OpenHands' prompt describes the levels
        if intent.kind == "run":
            return render_call("execute_bash", {"command": a["command"], "security_risk": "MEDIUM"})
        if intent.kind == "read":
            return render_call("str_replace_editor", {"command": "view", "path": path(a["path"]), "security_risk": "LOW"})
        if intent.kind in ("finish", "answer"):
            return render_call("finish", {"message": a.get("message", a.get("text", "Done."))})
        edit = self._edit(intent, session, path)
        if edit is None:
            raise ValueError(f"openhands cannot express a {intent.kind!r} intent")
        return render_call("str_replace_editor", edit | {"security_risk": "MEDIUM"})

    def _edit(self, intent: Intent, session: Session | None, path) -> dict[str, Any] | None:
        a = intent.args
        if intent.kind == "replace":
            return {"command": "str_replace", "path": path(a["path"]), "old_str": a["old"], "new_str": a["new"]}
        if intent.kind == "write":
            rel = resolve(a["path"]) or ""
            current = ws.read_text(session.env, rel) if session is not None and rel and ws.exists(session.env, rel) else None
            if current is None:
                return {"command": "create", "path": path(a["path"]), "file_text": a["content"]}
            if current == "":
                return {"command": "insert", "path": path(a["path"]), "insert_line": 0, "new_str": a["content"]}
            return {"command": "str_replace", "path": path(a["path"]), "old_str": current, "new_str": a["content"]}
        return None

    def expressible(self, intent: Intent) -> bool:
        texts = [str(v) for v in intent.args.values()]
        return not any("</parameter>" in t or "</function>" in t or "<parameter=" in t for t in texts)
