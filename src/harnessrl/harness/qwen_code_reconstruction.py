"""The Qwen Code reconstruction (harness id `qwen_code`, style `qwen_code_reconstruction`, formerly style
`qwen_code`): our re-implementation of Qwen Code's tools and turn loop, not the program (the real Qwen
Code is the `qwen-code-cli` program: harnessrl.programs.qwen_code).

Text encoding of function calls (for models without native tool calling) — the Hermes-style
format Qwen models are trained on and vLLM's `hermes` parser reads:

    <tool_call>
    {"name": "edit", "arguments": {"file_path": "/app/calc.py", "old_string": "a - b", "new_string": "a + b"}}
    </tool_call>

Any number of calls per reply; they run in order and all their results return in one user
message, each as `<tool_response>\\n...\\n</tool_response>` (how Qwen's chat template shows
tool results). A reply with no `<tool_call>` ends the episode; a `<tool_call>` whose body is
not a JSON object with `name` and `arguments` is a format error (nothing runs). A call's JSON
may hold the text `</tool_call>` in a string (a file that contains it): the body ends after
the object, not at that text (`_reply.call_spans`).

Tools: `read_file{file_path, offset, limit}`, `edit{file_path, old_string, new_string,
replace_all}`, `write_file{file_path, content}`, `run_shell_command{command, is_background,
timeout (ms), description, directory}`, and the read-only `list_directory`, `glob`,
`grep_search` (also under its old name `search_file_content`; see _qwen_tools). Paths must
be absolute under /app. Shell results: Command / Directory / Output (stdout and stderr as one
stream, in order, as Qwen Code's pseudo-terminal shows them) / Error (only when the command
could not run at all) / Exit Code / Signal. Each command is a fresh shell in the sandbox.
Three identical validation failures add a retry-loop warning; five identical calls in a row
trip the loop detector, which ends the episode. Follows Qwen Code 0.15 (docs/harnesses.md).
"""

from __future__ import annotations

import json
from typing import Any

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import WORKDIR, CodeHarness, CodeSession, absolute, cap_middle, resolve, shown
from harnessrl.harness._qwen_tools import PARAMS as SEARCH_PARAMS, REQUIRED as SEARCH_REQUIRED, SEARCH_TOOLS, run_search
from harnessrl.harness._reply import call_spans, finite_number, guarded, json_error, loads
from harnessrl.harness.base import FormatError, Intent, Session, StepResult, ToolCall, register_style

REQUIRED = {"read_file": ("file_path",), "edit": ("file_path", "old_string", "new_string"),
            "write_file": ("file_path", "content"), "run_shell_command": ("command",)}
TYPES = {"file_path": str, "offset": int, "limit": int, "old_string": str, "new_string": str, "replace_all": bool,
         "content": str, "command": str, "is_background": bool, "timeout": (int, float), "description": str, "directory": str}
#: the parameters each tool takes (a parameter of another tool is "additional")
PARAMS = {"read_file": ("file_path", "offset", "limit"), "edit": ("file_path", "old_string", "new_string", "replace_all"),
          "write_file": ("file_path", "content"),
          "run_shell_command": ("command", "is_background", "timeout", "description", "directory")}
MAX_LINES, MAX_LINE_CHARS = 2000, 2000
MAX_CALLS = 64  # tool calls per reply; more is a format error (each may start a sandboxed process)
#: the range a numeric parameter must lie in (timeout in ms: at most a day)
RANGES = {"offset": (0, 10**9), "limit": (0, 10**9), "timeout": (0, 86_400_000), "maxResults": (0, 10**9)}


def parse_calls(text: str) -> list[ToolCall] | FormatError:
    if not isinstance(text, str):
        return FormatError("the reply is not text")
    if text.count("<tool_call>") > text.count("</tool_call>"):
        text += "</tool_call>"  # generation stopped at the closing tag
    calls = []
    for i, (start, end) in enumerate(call_spans(text, "<tool_call>", "</tool_call>", open_end=True), 1):
        if i > MAX_CALLS:
            return FormatError(f"more than {MAX_CALLS} tool calls in one reply; make fewer calls per reply")
        try:
            obj = loads(text[start:end])
        except ValueError as err:
            return FormatError(f"tool call {i} is not valid JSON ({json_error(err)}); write "
                               '<tool_call>{"name": ..., "arguments": {...}}</tool_call>')
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            return FormatError(f'tool call {i} must be a JSON object with a "name" string and an "arguments" object')
        args = obj.get("arguments", {})
        if isinstance(args, str):  # some models send the arguments JSON-encoded
            try:
                args = loads(args)
            except ValueError:
                return FormatError(f"tool call {i}: the arguments string is not valid JSON")
        if not isinstance(args, dict):
            return FormatError(f'tool call {i}: "arguments" must be a JSON object')
        calls.append(ToolCall(obj["name"], args))
    return calls


def render_calls(calls: list[tuple[str, dict[str, Any]]]) -> str:
    return "\n".join(f"<tool_call>\n{json.dumps({'name': n, 'arguments': a}, ensure_ascii=False)}\n</tool_call>"
                     for n, a in calls)


class QwenCodeSession(CodeSession):
    harness: "QwenCodeReconstruction"

    def start(self) -> list[dict[str, str]]:
        self.failures: dict[str, int] = {}
        self.last_calls: list[str] = []
        values = self.prompt_values() | {"tool_docs": self.harness.tool_docs()}
        return self.open_conversation(values)

    def step(self, text: str) -> StepResult:
        calls = self.harness.parse(text)
        if isinstance(calls, FormatError):
            return self.record_format_error(text, calls)
        if not calls:
            self.stop("no_tool_call")
            return self.end_turn(text, "", done=True)
        responses, status = [], "ok"
        for call in calls:
            key = json.dumps([call.name, call.args], sort_keys=True, default=str)
            self.last_calls = (self.last_calls + [key])[-int(self.opt("loop_threshold", 5)):]
            if len(self.last_calls) == int(self.opt("loop_threshold", 5)) and len(set(self.last_calls)) == 1:
                self.stop("loop_detected")
                responses.append("Loop detected: the same tool call was repeated; the session stops here.")
                break
            error = self.harness.validate(call)
            if error:
                n = self.failures[key + error] = self.failures.get(key + error, 0) + 1
                if n >= 3:
                    error += ("\nThis exact call has failed validation 3 times. Do not retry it unchanged: "
                              "read the tool's parameters again and change your approach.")
                responses.append(f"Error: {error}")
                status = "tool_error"
                continue
            out, ok = self._run(call)
            status = status if ok else ("timeout" if out.startswith("Command timed out") else "tool_error")
            responses.append(out)
        body = "\n".join(f"<tool_response>\n{cap_middle(r, self.harness.spec.max_observation_chars)}\n</tool_response>"
                         for r in responses)
        return self.end_turn(text, "" if self.done else body, tool_calls=calls, tool_result="\n".join(responses),
                             status=status, done=self.done)

    # -- the tools --------------------------------------------------------------------------

    def _run(self, call: ToolCall) -> tuple[str, bool]:
        a = call.args
        try:
            if call.name == "run_shell_command":
                return self._shell(a)
            if call.name in SEARCH_TOOLS:
                return run_search(self.env, self.shell, call.name, a)
            rel = resolve(a["file_path"])
            if call.name == "read_file":
                return self._read(rel, a)
            if call.name == "write_file":
                existed = ws.exists(self.env, rel)
                ws.write_text(self.env, rel, a["content"])
                return (f"Successfully overwrote file: {a['file_path']}." if existed
                        else f"Successfully created and wrote to new file: {a['file_path']}."), True
            return self._edit(rel, a)
        except ws.FileError as err:
            return f"Error: {err}", False

    def _read(self, rel: str, a: dict[str, Any]) -> tuple[str, bool]:
        if not ws.exists(self.env, rel):
            return f"File not found: {a['file_path']}", False
        if ws.is_dir(self.env, rel):
            return f"Path is a directory, not a file: {a['file_path']}", False
        lines = ws.read_text(self.env, rel).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        offset, limit = int(a.get("offset") or 0), int(a.get("limit") or MAX_LINES)
        if offset < 0 or offset > len(lines) or limit <= 0:
            return f"offset {offset} / limit {limit} outside the file ({len(lines)} lines)", False
        chosen = [ln if len(ln) <= MAX_LINE_CHARS else ln[:MAX_LINE_CHARS] + "... [line truncated]"
                  for ln in lines[offset:offset + limit]]
        content = "\n".join(chosen)
        if offset > 0 or offset + limit < len(lines):
            end = offset + len(chosen)
            return (f"[The file is shown in part: lines {offset + 1}-{end} of {len(lines)}. Read more with "
                    f"offset and limit, e.g. offset: {end}.]\n{content}"), True
        return content, True

    def _edit(self, rel: str, a: dict[str, Any]) -> tuple[str, bool]:
        path, old, new = a["file_path"], a["old_string"], a["new_string"]
        exists = ws.exists(self.env, rel)
        if old == "":
            if exists:
                return "Failed to edit. Attempted to create a file that already exists.", False
            ws.write_text(self.env, rel, new)
            return f"Created new file: {path} with provided content.", True
        if not exists:
            return f"File not found: {path}. Cannot apply edit. Use an empty old_string to create a new file.", False
        text = ws.read_text(self.env, rel)
        count = text.count(old)
        if count == 0:
            return (f"Failed to edit, 0 occurrences found for old_string in {path}. No edits made. The exact text "
                    "in old_string was not found; check whitespace, indentation and context, and use read_file "
                    "to see the file as it is."), False
        if count > 1 and not a.get("replace_all"):
            return (f"Failed to edit, found {count} occurrences for old_string in {path} but replace_all was not "
                    "enabled. Include more surrounding context to make old_string unique, or set replace_all "
                    "to true."), False
        if old == new:
            return f"No changes to apply to {path}: old_string and new_string are identical.", False
        ws.write_text(self.env, rel, text.replace(old, new) if a.get("replace_all") else text.replace(old, new, 1))
        return f"Successfully modified file: {path} ({count if a.get('replace_all') else 1} replacements).", True

    def _shell(self, a: dict[str, Any]) -> tuple[str, bool]:
        directory = a.get("directory") or ""
        cwd = resolve(directory) if directory else ""
        if cwd is None or (cwd and not ws.is_dir(self.env, cwd)):
            return f"Directory '{directory}' is not a directory inside the project root ({WORKDIR}).", False
        timeout = min(max(1.0, float(a.get("timeout") or self.harness.spec.command_timeout_s * 1000) / 1000),
                      float(self.opt("max_command_timeout_s", 600)))
        # one stream, as Qwen Code's pseudo-terminal gives it: stderr lands in Output, in order
        out = self.shell.run("exec 2>&1\n" + a["command"], cwd=shown(cwd), timeout=timeout, keep_cwd=False)
        note = "\n(Ran in the foreground: background processes are not kept between commands here.)" if a.get("is_background") else ""
        if out.status == "timeout":
            return f"Command timed out after {timeout:g} s and was stopped.\nCommand: {a['command']}", False
        # Error is for a command that could not be started or run at all, not for its stderr
        error = "(none)" if out.status in ("ok", "output_truncated") else f"the command could not run to completion ({out.status})"
        output = (out.stdout + out.stderr).rstrip()
        return (f"Command: {a['command']}\nDirectory: {directory or '(root)'}\n"
                f"Output: {output or '(empty)'}\nError: {error}\n"
                f"Exit Code: {out.exit_code if out.exit_code is not None else '(none)'}\n"
                f"Signal: {out.signal if out.signal is not None else '(none)'}{note}"), True


@register_style
class QwenCodeReconstruction(CodeHarness):
    style = "qwen_code_reconstruction"
    all_tools = ("read_file", "edit", "write_file", "run_shell_command", "list_directory", "glob", "grep_search")
    tool_capabilities = {"edit": frozenset({"edit"}), "write_file": frozenset({"edit"}),
                         "run_shell_command": frozenset({"shell", "edit"})}
    session_class = QwenCodeSession

    def tool_docs(self) -> str:
        docs = self.spec.options.get("tool_docs", {})
        return "\n\n".join(docs[t] for t in self.tools if t in docs)

    @guarded
    def parse(self, text: str) -> list[ToolCall] | FormatError:
        return parse_calls(text)

    def validate(self, call: ToolCall) -> str:
        """Qwen Code's parameter validation; the message is the function response."""
        name = "grep_search" if call.name == "search_file_content" else call.name  # the pre-0.1 name
        if name not in self.tools:
            return f'Tool "{call.name}" not found in registry. Available tools: {", ".join(self.tools)}.'
        search = call.name in SEARCH_TOOLS
        params = SEARCH_PARAMS[call.name] if search else {p: TYPES[p] for p in PARAMS[call.name]}
        for p in SEARCH_REQUIRED[call.name] if search else REQUIRED[call.name]:
            if p not in call.args:
                return f"params must have required property '{p}'"
        for p, v in call.args.items():
            if p not in params:
                return f"params must NOT have additional properties: '{p}'"
            if not isinstance(v, params[p]) or (params[p] is int and isinstance(v, bool)):
                return f"params/{p} has the wrong type"
            if p in RANGES and finite_number(v, *RANGES[p]) is None:
                return f"params/{p} must be between {RANGES[p][0]} and {RANGES[p][1]}"
        path = call.args.get("file_path", call.args.get("path"))
        if path is not None:
            if not path.startswith("/"):
                return f"File path must be absolute: {path}"
            if resolve(path) is None or (not search and not resolve(path)):
                return f"File path must be within the root directory ({WORKDIR}): {path}"
        return ""

    # -- scripted plans ----------------------------------------------------------------------

    def _call(self, intent: Intent) -> tuple[str, dict[str, Any]] | None:
        a = intent.args
        path = absolute
        if intent.kind == "write":
            return "write_file", {"file_path": path(a["path"]), "content": a["content"]}
        if intent.kind == "replace":
            return "edit", {"file_path": path(a["path"]), "old_string": a["old"], "new_string": a["new"]}
        if intent.kind == "run":
            return "run_shell_command", {"command": a["command"]}
        if intent.kind == "read":
            return "read_file", {"file_path": path(a["path"])}
        return None

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        call = self._call(intent)
        if call is None:
            if intent.kind in ("finish", "answer"):
                return intent.args.get("message", intent.args.get("text", "The task is done."))
            raise ValueError(f"qwen_code cannot express a {intent.kind!r} intent")
        return render_calls([call])

    def render_turn(self, intents: list[Intent], session: Session) -> tuple[str, int]:
        """All tool calls up to the next finish go in one reply; a finish is a reply without calls."""
        calls = []
        for intent in intents:
            call = self._call(intent)
            if call is None:
                break
            calls.append(call)
        if not calls:
            return self.render_intent(intents[0], session), 1
        return render_calls(calls), len(calls)
