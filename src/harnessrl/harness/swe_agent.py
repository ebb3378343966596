"""swe_agent: SWE-agent 1.x with its default config — v1.1.0 (tag, commit 0f3acaf),
`config/default.yaml`: bundles `tools/registry`, `tools/edit_anthropic`,
`tools/review_on_submit_m`, the built-in `bash` tool, the `function_calling` parser,
history processor `cache_control` only (every observation stays in full).

Function calls as text (the model has no native tool calling here): the Hermes-style block
that Qwen-family chat templates and vLLM's `hermes` parser use,

    <tool_call>
    {"name": "str_replace_editor", "arguments": {"command": "view", "path": "/app/calc.py"}}
    </tool_call>

Anything outside the block is the thought. As the function-calling parser: exactly ONE call
per reply (none -> the "missing" error, two or more -> "multiple"); an unknown name, arguments
that are not JSON, a missing required or an unexpected argument are format errors; argument
*types* are not checked by the parser (the tool's own argument parsing refuses a bad
`insert_line`/`view_range`, as an observation). Tools: `bash{command}`,
`str_replace_editor{command, path, file_text, old_str, new_str, insert_line, view_range}`
(see _swe_tools), `submit{}`.

Results of a valid call are tool messages upstream (role "tool"); here they are user messages
wrapped in `<tool_response>` tags, as Qwen-family chat templates render role "tool". The
re-ask messages below are user messages upstream too, and are not wrapped.

Control (sweagent/agent/agents.py, tools/tools.py of 1.1.0):
- a format error, a blocklisted command or a bash syntax error (`bash -n`) is re-asked: the
  model sees the valid history plus only its latest failed reply and the error; once a reply
  is valid the failed ones leave the history. The 3rd failure in a row ends the run
  (`exit_format`) and the workspace is submitted as it stands (autosubmission).
- observations: `OBSERVATION:` + output; blank output -> the no-output message alone; over
  100,000 characters -> `Observation: ` + the first 100,000 + a clipped note with the count.
- commands time out after 30 s with a message; the 3rd timeout in a row ends the run
  (`exit_command_timeout`, autosubmitted). `exit` ends it with nothing submitted.
- `submit` (review_on_submit_m): the first call answers with review steps and the patch so
  far; the second submits and ends the run. `submit -f` (typed in bash) submits at once.
Each command is a fresh sandboxed process (the working directory carries over, exported
variables do not): the stated difference from SWE-agent's persistent shell session.
Every difference is listed in docs/harnesses.md.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import CodeHarness, CodeSession, absolute, resolve
from harnessrl.harness._reply import call_spans, guarded, json_error, loads
from harnessrl.harness._swe_tools import Editor, EditorError, blocked, patch, restore
from harnessrl.harness.base import FormatError, Intent, Session, StepResult, ToolCall, Verdict, fill, register_style

#: name -> {argument: required}; the schema the model is shown (descriptions in the spec)
SCHEMA: dict[str, dict[str, bool]] = {
    "bash": {"command": True},
    "str_replace_editor": {"command": True, "path": True, "file_text": False, "old_str": False, "new_str": False,
                           "insert_line": False, "view_range": False},
    "submit": {},
}
_SUBMIT = re.compile(r"submit(\s+(-f|--force))?")


class CallError(FormatError):
    """A format error with the parser's error code: missing | multiple | unexpected_arg | other."""

    def __init__(self, message: str, code: str = "other"):
        super().__init__(message)
        self.code = code


def parse_call(text: str, tools: tuple[str, ...]) -> list[ToolCall] | FormatError:
    """One reply -> exactly one call, as SWE-agent's FunctionCallingParser accepts it."""
    if text.count("<tool_call>") > text.count("</tool_call>"):
        text += "</tool_call>"  # generation stopped at the closing tag
    spans = []
    for span in call_spans(text, "<tool_call>", "</tool_call>", open_end=True):
        spans.append(span)
        if len(spans) > 1:
            return CallError("expected exactly one tool call, got several", "multiple")
    if not spans:
        return CallError("expected exactly one tool call, got none", "missing")
    try:
        obj = loads(text[spans[0][0]:spans[0][1]])
    except ValueError as err:
        return CallError(f"the tool call is not valid JSON ({json_error(err)})")
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return CallError('the tool call must be a JSON object with a "name" string and an "arguments" object')
    name, args = obj["name"], obj.get("arguments", {})
    if name not in SCHEMA or name not in tools:
        return CallError(f"the command '{name}' is not one of the available commands")
    if isinstance(args, str):  # OpenAI-style: the arguments JSON-encoded in a string
        try:
            args = loads(args)
        except ValueError:
            return CallError("the tool call's arguments are not valid JSON")
    if not isinstance(args, dict):
        return CallError("the tool call's arguments are not valid JSON")
    missing = [a for a, required in SCHEMA[name].items() if required and a not in args]
    if missing:
        return CallError(f"required argument(s) missing: {', '.join(missing)}")
    extra = [a for a in args if a not in SCHEMA[name]]
    if extra:
        return CallError(f"unexpected argument(s): {', '.join(extra)}", "unexpected_arg")
    return [ToolCall(name, args)]


def render_call(name: str, args: dict[str, Any], thought: str = "") -> str:
    # `<\/` is JSON for `</`: a value holding "</tool_call>" cannot close the block early
    call = json.dumps({"name": name, "arguments": args}, ensure_ascii=False).replace("</", "<\\/")
    return f"{thought}\n\n<tool_call>\n{call}\n</tool_call>" if thought else f"<tool_call>\n{call}\n</tool_call>"


class SweAgentSession(CodeSession):
    harness: "SweAgentHarness"

    def start(self) -> list[dict[str, str]]:
        self.editor = Editor(self.env, self.shell, use_filemap=bool(self.opt("use_filemap", True)),
                             undo=bool(self.opt("editor_undo", False)))
        self.before = self.env.workspace.snapshot()  # for the patch the first `submit` shows
        self.submit_stage = 0
        self.requeries = 0  # failed replies in a row within this step
        self.timeouts_in_a_row = 0
        self.submitted = False
        values = self.prompt_values() | {"tool_docs": self.harness.tool_docs()}
        self._valid = self.open_conversation(values)[:]  # the history without failed replies
        return self.messages

    # -- requery (format / blocklist / bash syntax errors) ------------------------------------

    def _requery(self, text: str, message: str, status: str, reason: str) -> StepResult:
        self.format_errors += 1
        self.consecutive_format_errors += 1
        self.requeries += 1
        # the valid history + only the latest failed reply and its error
        self.messages = self._valid + [{"role": "assistant", "content": text}, {"role": "user", "content": message}]
        if self.requeries >= int(self.opt("max_requeries", 3)):
            self.stop("exit_format", "format_error")  # the workspace as it stands is graded (autosubmission)
        return StepResult(observation=message, status=status, tool_result=reason, done=self.done)

    def _format_message(self, err: FormatError) -> str:
        return fill(self.harness.spec.options["format_errors"][getattr(err, "code", "other")], message=err.message)

    # -- one step -----------------------------------------------------------------------

    def step(self, text: str) -> StepResult:
        calls = self.harness.parse(text)
        if isinstance(calls, FormatError):
            return self._requery(text, self._format_message(calls), "format_error", calls.message)
        call = calls[0]
        command = call.args.get("command") if call.name == "bash" else None
        if command is not None:
            command = command if isinstance(command, str) else str(command)
            mode = str(self.opt("blocklist_mode", "v1.1.0"))
            if blocked(command, tuple(self.opt("blocklist", ())), tuple(self.opt("blocklist_standalone", ())), mode):
                return self._requery(text, fill(self.opt("blocked", ""), action=command), "blocked",
                                     f"blocked: {command[:200]}")
            check = self.shell.run(f"bash -n -c {shlex.quote(command)}", keep_cwd=False)
            if check.exit_code not in (0, None) and check.status == "ok":
                msg = fill(self.opt("syntax_error", ""), bash_stdout=check.stdout, bash_stderr=check.stderr)
                return self._requery(text, msg, "format_error", "bash syntax error")
        self.requeries = 0
        self.messages = self._valid  # a valid reply: the failed ones leave the history
        if command is not None and command.strip() == "exit":
            self.stop("exit_command")
            return self.end_turn(text, "", tool_calls=[call], tool_result="Exited", done=True)
        output, status = self._execute(call, command)
        if self.submitted:
            self.stop("submitted")
            return self.end_turn(text, "", tool_calls=[call], tool_result=output, done=True)
        observation = self._observation(output)
        done = False
        if status == "timeout":
            self.timeouts_in_a_row += 1
            if self.timeouts_in_a_row >= int(self.opt("max_consecutive_timeouts", 3)):
                self.stop("exit_command_timeout", "timeout")  # autosubmission: the workspace is graded
                done, observation = True, ""
        else:
            self.timeouts_in_a_row = 0
        if observation:  # a tool message upstream: shown as the chat template renders role "tool"
            observation = fill(self.opt("tool_response", "$observation"), observation=observation)
        return self.end_turn(text, observation, tool_calls=[call], tool_result=output, status=status, done=done)

    def _observation(self, output: str) -> str:
        limit = self.harness.spec.max_observation_chars
        if not output.strip():
            return self.opt("no_output", "")
        if len(output) > limit:
            return fill(self.opt("truncated", ""), observation=output[:limit], max_observation_length=limit,
                        elided_chars=len(output) - limit)
        return fill(self.opt("observation", "$observation"), observation=output)

    def _execute(self, call: ToolCall, command: str | None) -> tuple[str, str]:
        if call.name == "submit":
            return self._submit(force=False), "ok"
        if call.name == "str_replace_editor":
            return self._edit(call.args)
        m = _SUBMIT.fullmatch(command.strip())
        if m:  # the tools are commands on the shell's PATH upstream: `submit` typed in bash is the tool
            return self._submit(force=bool(m.group(1))), "ok"
        if command.strip().startswith("str_replace_editor"):
            return self._edit_from_bash(command)
        out = self.shell.run("exec 2>&1\n" + command)  # one stream, in order, as a terminal shows it
        if out.status == "timeout":
            return fill(self.opt("timeout", ""), command=command, timeout=f"{self.shell.timeout:g}"), "timeout"
        return out.stdout + out.stderr, "ok"

    def _edit(self, args: dict[str, Any]) -> tuple[str, str]:
        try:
            return self.editor(args) + "\n", "ok"
        except (EditorError, ws.FileError) as err:
            return f"{err}\n", "tool_error"

    def _edit_from_bash(self, command: str) -> tuple[str, str]:
        """`str_replace_editor COMMAND PATH [--flag value]...` typed in bash (simple commands only)."""
        try:
            argv = shlex.split(command)
        except ValueError as err:
            return f"bash: {err}\n", "tool_error"
        if argv[0] != "str_replace_editor" or len(argv) < 3:
            return "str_replace_editor: error: the arguments command and path are required\n", "tool_error"
        args: dict[str, Any] = {"command": argv[1], "path": argv[2]}
        rest = argv[3:]
        while rest:
            flag = rest.pop(0)
            name = flag[2:] if flag.startswith("--") else ""
            if name not in SCHEMA["str_replace_editor"] or name in ("command", "path") or not rest:
                return f"str_replace_editor: error: unrecognized arguments: {flag}\n", "tool_error"
            args[name] = [rest.pop(0), rest.pop(0) if rest else ""] if name == "view_range" else rest.pop(0)
        return self._edit(args)

    def _submit(self, force: bool) -> str:
        stages = self.opt("review_messages", [])
        if not force and self.submit_stage < len(stages):
            message = stages[self.submit_stage].replace("$diff", patch(self.before, self.env.workspace.snapshot()))
            self.submit_stage += 1
            return message
        self.submitted = True
        return "submitted"

    def finish(self) -> Verdict:
        if self.stop_reason == "exit_command":
            # `exit` ends the run with no submission: upstream evaluates the repository without a
            # patch, so the workspace goes back to how it began before the hidden tests run
            restore(self.env.workspace, self.before)
        return super().finish()


@register_style
class SweAgentHarness(CodeHarness):
    style = "swe_agent"
    all_tools = ("bash", "str_replace_editor", "submit")
    tool_capabilities = {"str_replace_editor": frozenset({"edit"}), "bash": frozenset({"shell", "edit"})}
    session_class = SweAgentSession

    def tool_docs(self) -> str:
        docs = self.spec.options.get("tool_docs", {})
        return "\n".join(docs[t].strip() for t in self.tools if t in docs)

    @guarded
    def parse(self, text: str) -> list[ToolCall] | FormatError:
        return parse_call(text, self.tools)

    def format_error_message(self, err: FormatError) -> str:
        return fill(self.spec.options["format_errors"][getattr(err, "code", "other")], message=err.message)

    # -- scripted plans ----------------------------------------------------------------------

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        return self.render_turn([intent], session)[0]

    def render_turn(self, intents: list[Intent], session: Session | None) -> tuple[str, int]:
        intent, a = intents[0], intents[0].args
        path = absolute
        if intent.kind == "run":
            return render_call("bash", {"command": a["command"]}, "Run a command."), 1
        if intent.kind == "read":
            return render_call("str_replace_editor", {"command": "view", "path": path(a["path"])}, "Look at the file."), 1
        if intent.kind in ("finish", "answer"):
            # review_on_submit_m: the first `submit` shows the review; the second one submits
            final = session is None or getattr(session, "submit_stage", 0) >= len(self.spec.options.get("review_messages", []))
            return render_call("submit", {}, "Submit the change." if final else "Ask for the review."), 1 if final else 0
        if intent.kind == "replace":
            return render_call("str_replace_editor", {"command": "str_replace", "path": path(a["path"]),
                                                      "old_str": a["old"], "new_str": a["new"]}, "Edit the file."), 1
        if intent.kind != "write":
            raise ValueError(f"swe_agent cannot express a {intent.kind!r} intent")
        rel = resolve(a["path"]) or ""
        current = ws.read_text(session.env, rel) if session is not None and rel and ws.exists(session.env, rel) else None
        if current is None:
            return render_call("str_replace_editor", {"command": "create", "path": path(a["path"]),
                                                      "file_text": a["content"]}, "Create the file."), 1
        if current == "" and a["content"].endswith("\n"):  # str_replace cannot take an empty old_str
            return render_call("str_replace_editor", {"command": "insert", "path": path(a["path"]), "insert_line": 0,
                                                      "new_str": a["content"][:-1]}, "Fill the empty file."), 1
        return render_call("str_replace_editor", {"command": "str_replace", "path": path(a["path"]),
                                                  "old_str": current, "new_str": a["content"]}, "Rewrite the file."), 1

    def expressible(self, intent: Intent) -> bool:
        return True  # JSON carries any text (render_call escapes `</`)
