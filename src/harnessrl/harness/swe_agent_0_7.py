"""swe_agent_0_7: SWE-agent's classic agent-computer interface as SWE-agent v1.1.0 (tag,
commit 0f3acaf) runs it with `config/sweagent_0_7/07.yaml` — the 0.7 prompts and tools
(tools/windowed, tools/search, tools/windowed_edit_linting, tools/submit) on the 1.x agent
loop (thought_action parser, ToolFilterConfig blocklist, `bash -n` check, requery, timeouts,
history processor `last_n_observations` n=5).

Each reply is a DISCUSSION and a command in a fenced block (the last top-level fenced block
is taken). Commands: `open "<path>" [<line>]`, `goto <line>`, `scroll_up`, `scroll_down`,
`create <file>`, `find_file <name> [<dir>]`, `search_dir <term> [<dir>]`,
`search_file <term> [<file>]`, `edit <start>:<end>` + replacement lines + `end_of_edit`,
`submit`; anything else is a bash command run in the sandbox, unless blocklisted.

Control: observations come back as `<output>\\n(Open file: ...)\\n(Current directory: ...)\\nbash-$`
(blank output: the no-output message with the same prompt lines; over 100,000 characters: the
truncated template, which has no prompt lines, as upstream); the instance template is followed
by our own short demonstration (07.yaml shows one recorded trajectory). Only the last 5
observations stay whole; older ones collapse to a line count. A malformed reply, a blocklisted
command or a bash syntax error is re-asked with only the latest failed reply shown; the 3rd in
a row ends the run and the workspace as it stands is submitted (`exit_format`). Commands time
out after 30 s; 3 timeouts in a row end the run. `submit` ends it.

Difference, stated: upstream sends the whole block to a bash session in which the special
commands are programs, so a block may mix them with other commands; here a special command
is recognised only as the block's whole content (one command per reply, as the prompt asks).
"""

from __future__ import annotations

import shlex

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import CodeHarness, CodeSession, resolve, shown
from harnessrl.harness._reply import fenced_blocks, guarded
from harnessrl.harness._swe_tools import BLOCKLIST, BLOCKLIST_STANDALONE, blocked, restore
from harnessrl.harness._swe_windowed import Tools, WindowState
from harnessrl.harness.base import FormatError, Intent, Session, StepResult, ToolCall, fill, register_style

SPECIAL = ("open", "goto", "scroll_up", "scroll_down", "create", "find_file", "search_dir", "search_file", "edit", "submit")


def parse_action(action: str, special: tuple[str, ...]) -> ToolCall | FormatError:
    """One command (the text of the fenced block) -> a tool call."""
    action = action.strip("\n")
    if not action.strip():
        return FormatError("the command block is empty")
    head, _, rest = action.partition("\n")
    word = head.split()[0] if head.split() else ""
    if word == "edit" and "edit" in special:
        body = rest.split("\n") if rest else []
        if "end_of_edit" not in body:
            return FormatError("an edit command must end with a line holding only `end_of_edit`")
        end = body.index("end_of_edit")
        if any(line.strip() for line in body[end + 1:]):
            return FormatError("one command per reply: nothing may follow `end_of_edit`")
        args = head.split()[1:]
        return ToolCall("edit", {"range": args[0] if args else "", "text": "\n".join(body[:end])})
    if word in special:
        if rest.strip():
            return FormatError(f"one command per reply: `{word}` takes a single line")
        try:
            argv = shlex.split(head)
        except ValueError as err:
            return FormatError(f"could not split the arguments of `{word}`: {err}")
        names = {"open": ("path", "line"), "goto": ("line",), "create": ("path",), "find_file": ("name", "dir"),
                 "search_dir": ("term", "dir"), "search_file": ("term", "path")}.get(word, ())
        if len(argv) - 1 > len(names):
            return FormatError(f"too many arguments for `{word}`")
        return ToolCall(word, dict(zip(names, argv[1:])))
    return ToolCall("bash", {"command": action.strip()})


class SweAgent07Session(CodeSession):
    harness: "SweAgent07Harness"

    def start(self) -> list[dict[str, str]]:
        self.state = WindowState(window=int(self.opt("window", 100)), overlap=int(self.opt("overlap", 2)))
        self.tools = Tools(self.env, self.shell, self.state, ws.python(self.env))
        self.history: list[tuple[str, str]] = []  # (reply, observation) of valid steps
        self.timeouts_in_a_row = 0
        self.requeries = 0
        self.before = self.env.workspace.snapshot()  # `exit` submits nothing: the tests then see this
        values = self.prompt_values() | {"window": self.state.window, "command_docs": self.harness.command_docs()}
        self._head = [{"role": "system", "content": fill(self.harness.spec.system_prompt, **values)}]
        if self.opt("demonstration", ""):  # demonstration_template, one user message (put_demos_in_history false)
            demo = fill(self.opt("demonstration_template", "$demonstration"), demonstration=self.opt("demonstration", ""))
            self._head.append({"role": "user", "content": demo})
        self._head.append({"role": "user", "content": fill(self.harness.spec.task_template, **values) + "\n"
                           + self._prompt_line()})
        self.messages = list(self._head)
        return self.messages

    def _prompt_line(self) -> str:
        open_file = shown(self.state.path) if self.state.path else "n/a"
        return f"(Open file: {open_file})\n(Current directory: {self.shell.cwd})\nbash-$"

    def view(self) -> dict:
        return {"open_file": self.state.path, "first_line": self.state.first, "cwd": self.shell.cwd}

    def _rebuild(self) -> None:
        keep = int(self.opt("keep_observations", 5))
        msgs = list(self._head)
        for i, (reply, obs) in enumerate(self.history):
            if i < len(self.history) - keep:
                obs = f"Old environment output: ({len(obs.splitlines())} lines omitted)"
            msgs += [{"role": "assistant", "content": reply}, {"role": "user", "content": obs}]
        self.messages = msgs

    def _requery(self, text: str, message: str, status: str) -> StepResult:
        """Re-ask with the valid history + only this failed reply and its error; the
        max_requeries-th failure in a row (3) ends the run (`exit_format`, autosubmitted)."""
        self.format_errors += 1
        self.consecutive_format_errors += 1
        self.requeries += 1
        self._rebuild()
        self.messages += [{"role": "assistant", "content": text}, {"role": "user", "content": message}]
        if self.requeries >= int(self.opt("max_requeries", 3)):
            self.stop("exit_format", "format_error")
        return StepResult(observation=message, status=status, tool_result=message[:200], done=self.done)

    def step(self, text: str) -> StepResult:
        call = self.harness.parse(text)
        if isinstance(call, FormatError):
            return self._requery(text, self.harness.format_error_message(call), "format_error")
        call = call[0]
        if call.name == "bash":
            command = call.args["command"]
            if self.harness.blocked(command):
                return self._requery(text, fill(self.opt("blocked", "The operation '$action' is not available in this environment."),
                                                action=command), "blocked")
            check = self.shell.run(f"bash -n -c {shlex.quote(command)}", keep_cwd=False)
            if check.exit_code not in (0, None) and check.status == "ok":
                return self._requery(text, "Your bash command has syntax errors and was NOT run. Fix them and try again; "
                                     "this can happen when a multi-line command does not follow the syntax. What `bash -n` "
                                     f"said:\n{check.stdout}\n{check.stderr}", "format_error")
        self.requeries = 0
        if call.name == "bash" and call.args["command"].strip() == "exit":  # the 1.x loop: ends, nothing submitted
            self.stop("exit_command")
            self.history.append((text, ""))
            result = self.end_turn(text, "", tool_calls=[call], tool_result="Exited", done=True)
            self._rebuild()
            return result
        try:
            observation, status = self._execute(call)
        except ws.FileError as err:  # e.g. a symlink out of /app: refused, and the model is told
            observation, status = f"Error: {err}", "tool_error"
        if call.name == "submit":
            self.stop("submitted")
            self.history.append((text, ""))
            result = self.end_turn(text, "", tool_calls=[call], tool_result="submitted", done=True)
            self._rebuild()
            return result
        limit = self.harness.spec.max_observation_chars
        if not observation.strip():  # next_step_no_output_template
            full = f"Your command completed successfully and printed no output.\n{self._prompt_line()}"
        elif len(observation) > limit:  # 1.1.0's default truncated template (07.yaml keeps it: no prompt lines)
            full = (f"Observation: {observation[:limit]}<response clipped><NOTE>Observations may not be longer than "
                    f"{limit} characters; {len(observation) - limit} characters were cut. Try another command with less "
                    "output, or narrow it with head, tail or grep, or send it to a file. Do not use interactive "
                    "pagers.</NOTE>")
        else:  # next_step_template
            full = f"{observation}\n{self._prompt_line()}"
        self.history.append((text, full))
        done = False
        if status == "timeout":
            self.timeouts_in_a_row += 1
            if self.timeouts_in_a_row >= int(self.opt("max_consecutive_timeouts", 3)):
                self.stop("exit_command_timeout", "timeout")
                done = True
        else:
            self.timeouts_in_a_row = 0
        result = self.end_turn(text, full, tool_calls=[call], tool_result=observation, status=status, done=done)
        self._rebuild()
        return result

    def finish(self):
        if self.stop_reason == "exit_command":
            restore(self.env.workspace, self.before)
        return super().finish()

    def _execute(self, call: ToolCall) -> tuple[str, str]:
        a, t = call.args, self.tools
        if call.name == "open":
            return t.open(a.get("path"), a.get("line")), "ok"
        if call.name == "goto":
            return t.goto(a.get("line")), "ok"
        if call.name in ("scroll_up", "scroll_down"):
            return t.scroll(-1 if call.name == "scroll_up" else 1), "ok"
        if call.name == "create":
            return t.create(a.get("path")), "ok"
        if call.name == "edit":
            obs, ok = t.edit(a["range"], a["text"])
            return obs, "ok" if ok else "tool_error"
        if call.name == "find_file":
            return t.find_file(a.get("name"), a.get("dir")), "ok"
        if call.name == "search_dir":
            return t.search_dir(a.get("term"), a.get("dir")), "ok"
        if call.name == "search_file":
            return t.search_file(a.get("term"), a.get("path")), "ok"
        if call.name == "submit":
            return "", "ok"
        out = self.shell.run("exec 2>&1\n" + a["command"])  # one stream, in order, as the session shows it
        if out.status == "timeout":
            secs = int(self.shell.timeout)
            return (f"The command '{a['command']}' was stopped because it ran longer than {secs} seconds. "
                    "Try a different command that finishes sooner."), "timeout"
        return out.stdout + out.stderr, "ok"


@register_style
class SweAgent07Harness(CodeHarness):
    style = "swe_agent_0_7"
    all_tools = SPECIAL + ("bash",)
    tool_capabilities = {"edit": frozenset({"edit"}), "bash": frozenset({"shell", "edit"})}
    session_class = SweAgent07Session

    @property
    def special(self) -> tuple[str, ...]:
        return tuple(c for c in SPECIAL if c in self.tools)

    def command_docs(self) -> str:
        docs = self.spec.options.get("command_docs", {})
        return "\n".join(docs[c] for c in self.special if c in docs)

    def blocked(self, command: str) -> bool:
        """ToolHandler.should_block_action of v1.1.0 (see _swe_tools.blocked; `blocklist_mode`)."""
        if "bash" not in self.tools:
            return True
        o = self.spec.options
        return blocked(command, tuple(o.get("blocklist", BLOCKLIST)), tuple(o.get("blocklist_standalone", BLOCKLIST_STANDALONE)),
                       str(o.get("blocklist_mode", "v1.1.0")))

    @guarded
    def parse(self, text: str) -> list[ToolCall] | FormatError:
        blocks = fenced_blocks(text)
        if not blocks:
            return FormatError("no command found")
        call = parse_action(blocks[-1], self.special)
        return call if isinstance(call, FormatError) else [call]

    def format_error_message(self, err: FormatError) -> str:
        # ThoughtActionParser.error_message (1.1.0), in our words, with the reason added
        return (f"Your output was not formatted correctly ({err.message}). Every reply must hold one discussion and "
                "one command, with no further discussion or command parts. Follow this format exactly:\n"
                "DISCUSSION\nThink here about what you plan and what you will do in this step.\n\n"
                "```\nthe command(s) you will run\n```")

    # -- scripted plans ----------------------------------------------------------------------

    def render_command(self, command: str, thought: str = "Next step.") -> str:
        return f"DISCUSSION\n{thought}\n\n```\n{command}\n```\n"

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        return self.render_turn([intent], session)[0]

    def render_turn(self, intents: list[Intent], session: Session | None) -> tuple[str, int]:
        intent, a = intents[0], intents[0].args
        if intent.kind == "run":
            return self.render_command(a["command"], "Run a shell command."), 1
        if intent.kind == "read":
            return self.render_command(f'open "{a["path"]}"', "Look at the file."), 1
        if intent.kind in ("finish", "answer"):
            return self.render_command("submit", "The change is complete."), 1
        if intent.kind not in ("write", "replace"):
            raise ValueError(f"swe_agent_0_7 cannot express a {intent.kind!r} intent")
        rel = resolve(a["path"])
        view = session.view() if session is not None else {}
        exists = session is not None and rel and ws.exists(session.env, rel)
        if view.get("open_file") != rel:
            return (self.render_command(f'open "{a["path"]}"', "Open the file to edit it.") if exists
                    else self.render_command(f"create {a['path']}", "Create the file.")), 0
        # merge the consecutive edits of this file into one edit over the lines that change
        current = ws.read_text(session.env, rel)
        final, used = current, 0
        for it in intents:
            if it.kind not in ("write", "replace") or it.args["path"] != a["path"]:
                break
            final = it.args["content"] if it.kind == "write" else final.replace(it.args["old"], it.args["new"], 1)
            used += 1
        start, end, text = line_edit(current, final)
        if start is None:  # the edits change nothing: go on with the rest of the plan
            if used < len(intents):
                text, more = self.render_turn(intents[used:], session)
                return text, used + more
            return self.render_command("submit", "Nothing left to change."), used
        return self.render_command(f"edit {start}:{end}\n{text}\nend_of_edit", "Edit the lines that change."), used

    def expressible(self, intent: Intent) -> bool:
        texts = [str(intent.args.get(k, "")) for k in ("content", "new")]
        if any("end_of_edit" in t.split("\n") or "```" in t for t in texts):
            return False
        if intent.kind == "run":
            call = parse_action(intent.args["command"], self.special)
            return isinstance(call, ToolCall) and call.name == "bash" and not self.blocked(intent.args["command"])
        return True


def line_edit(current: str, final: str) -> tuple[int | None, int, str]:
    """The smallest `edit start:end` (1-based) turning `current` into `final` under the line model.

    An empty replacement deletes lines, so a change to exactly one empty line takes a
    neighbouring unchanged line along to stay non-empty.
    """
    a, b = current.split("\n"), final.split("\n")
    if a == b:
        return None, 0, ""
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    s = 0
    while s < min(len(a), len(b)) - p and a[-1 - s] == b[-1 - s]:
        s += 1
    if b[p:len(b) - s] == [""] or p + s >= len(a):  # keep the replacement non-empty, the range non-empty
        if p > 0:
            p -= 1
        elif s > 0:
            s -= 1
    old, new = a[p:len(a) - s], b[p:len(b) - s]
    return p + 1, p + len(old), "\n".join(new)
