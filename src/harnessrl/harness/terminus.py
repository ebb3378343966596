"""terminus: Terminal-Bench's Terminus 2 — JSON keystrokes into a tmux pane in the sandbox.

The model answers one JSON object:

    {"analysis": "...", "plan": "...",
     "commands": [{"keystrokes": "ls -la\\n", "duration": 0.5}], "task_complete": false}

Each command's keystrokes go to a 160x40 tmux pane (tmux key names such as "C-c" are keys;
anything else is typed), then the harness waits min(duration, 60) s — returning as soon as
the shell is back at its prompt, which changes timing only. The next message is "New
Terminal Output:" (what appeared since the last look) or "Current Terminal Screen:",
capped at 10 kB. A response that is not such JSON gets a parse-error message and nothing
runs. `task_complete: true` must come on two consecutive replies (the first is answered with
a confirmation question). The only limit of the original is the agent timeout (360 s of
environment time here; `options.agent_timeout_s`) — we also keep `max_turns` as a backstop.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
import time
from typing import Any

from harnessrl.harness import _workspace as ws
from harnessrl.harness._common import CodeHarness, CodeSession, resolve
from harnessrl.harness._reply import finite_number, guarded, json_error, loads
from harnessrl.harness.base import FormatError, Intent, Session, StepResult, ToolCall, Verdict, fill, register_style
from harnessrl.tasks.terminal import TerminalError

PS1 = "agent@sandbox:\\w [\\#]$ "  # \\# counts commands run: a higher number = the command finished
_PROMPT = re.compile(r"agent@sandbox:[^\n]* \[(\d+)\]\$ ?$")
_SAFE = re.compile(r"^[\x20-\x7e\n]*$")  # typed as-is; anything else travels base64-encoded
MAX_DURATION_S = 10**6  # a duration is a finite number of seconds up to this (the session waits at most 60)


def parse_response(text: str) -> list[ToolCall] | FormatError:
    if not isinstance(text, str):
        return FormatError("the response is not text")
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return FormatError("No valid JSON object found in the response")
    try:
        obj = loads(text[start:end + 1])
    except ValueError as err:
        return FormatError(f"Invalid JSON: {json_error(err)}")
    if not isinstance(obj, dict):
        return FormatError("The response must be a JSON object")
    missing = [k for k in ("analysis", "plan", "commands") if k not in obj]
    if missing:
        return FormatError(f"Missing required fields: {', '.join(missing)}")
    if not isinstance(obj["commands"], list):
        return FormatError("Field 'commands' must be an array")
    calls = []
    for i, cmd in enumerate(obj["commands"]):
        if not isinstance(cmd, dict) or not isinstance(cmd.get("keystrokes"), str):
            return FormatError(f"Command {i} must be an object with a 'keystrokes' string")
        duration = finite_number(cmd.get("duration", 1.0), -MAX_DURATION_S, MAX_DURATION_S)
        if duration is None:
            return FormatError(f"Command {i}: 'duration' must be a number of seconds (at most {MAX_DURATION_S:,})")
        calls.append(ToolCall("keystrokes", {"keystrokes": cmd["keystrokes"], "duration": duration}))
    complete = obj.get("task_complete", False)
    if isinstance(complete, str) and complete.lower() in ("true", "false"):
        complete = complete.lower() == "true"
    if not isinstance(complete, bool):
        return FormatError("Field 'task_complete' must be true or false")
    if complete:
        calls.append(ToolCall("task_complete", {}))
    return calls


def render_response(commands: list[tuple[str, float]], complete: bool, analysis: str = "", plan: str = "") -> str:
    return json.dumps({"analysis": analysis, "plan": plan,
                       "commands": [{"keystrokes": k, "duration": d} for k, d in commands],
                       "task_complete": complete}, indent=2, ensure_ascii=False)


def limit_bytes(text: str, limit: int) -> str:
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    half = limit // 2
    return (data[:half].decode("utf-8", "ignore") + f"\n[... output limited to {limit} bytes; "
            f"{len(data) - 2 * half} interior bytes omitted ...]\n" + data[-half:].decode("utf-8", "ignore"))


class TerminusSession(CodeSession):
    harness: "TerminusHarness"

    def start(self) -> list[dict[str, str]]:
        self.pending_completion = False
        self.env_seconds = 0.0
        self.term = ws.terminal(self.env, width=int(self.opt("width", 160)), height=int(self.opt("height", 40)))
        # a known prompt that numbers commands (to see when one finished), no history expansion
        self.term.send_keys(f"set +H; PS1={shlex.quote(PS1)}; cd /app; clear\n", literal=True)
        self._wait_prompt(5.0, after=-1)
        self.previous = self.term.capture(history=True).rstrip()
        values = self.prompt_values() | {"screen": self.term.capture().rstrip()}
        self.messages = [{"role": "system", "content": fill(self.harness.spec.system_prompt, **values)},
                         {"role": "user", "content": fill(self.harness.spec.task_template, **values)}]
        return self.messages

    def view(self) -> dict[str, Any]:
        return {"pending_completion": self.pending_completion}

    def _prompt_number(self) -> int | None:
        """The command number of the prompt the shell is waiting at, or None while it is busy."""
        lines = [ln for ln in self.term.capture().split("\n") if ln.strip()]
        m = _PROMPT.search(lines[-1].rstrip() + " ") if lines else None
        return int(m.group(1)) if m else None

    def _wait_prompt(self, duration: float, after: int | None) -> None:
        """Wait up to `duration` s; return early once a prompt numbered above `after` shows
        (the typed command has run). `after=None`: nothing to wait for, sleep it out."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < duration:
            if after is not None:
                n = self._prompt_number()
                if n is not None and n > after:
                    return
            time.sleep(0.03)

    def _output(self) -> str:
        history = self.term.capture(history=True).rstrip()
        limit = int(self.opt("max_output_bytes", 10_000))
        if self.previous and history.startswith(self.previous):
            new = history[len(self.previous):]
            self.previous = history
            if new.strip():
                return "New Terminal Output:\n" + limit_bytes(new.lstrip("\n"), limit)
        self.previous = history
        return "Current Terminal Screen:\n" + limit_bytes(self.term.capture().rstrip(), limit)

    def step(self, text: str) -> StepResult:
        calls = self.harness.parse(text)
        if isinstance(calls, FormatError):
            return self.record_format_error(text, calls)
        complete = any(c.name == "task_complete" for c in calls)
        cap = float(self.opt("max_duration_s", 60))
        skipped: list[str] = []
        try:
            for call in calls:
                if call.name != "keystrokes":
                    continue
                t0 = time.monotonic()
                keys = call.args["keystrokes"].replace("\x00", "")
                if len(keys.encode("utf-8", "replace")) > int(self.opt("max_keystroke_bytes", 65_536)):
                    skipped.append(f"keystrokes of {len(keys)} characters were not sent (limit 64 kB per command)")
                    continue
                keys = keys.encode("utf-8", "replace").decode("utf-8")
                before = self._prompt_number() if keys.endswith("\n") else None
                self.term.send_keys(keys, literal=not self.harness.is_key_name(keys))
                self._wait_prompt(max(0.0, min(call.args["duration"], cap)), before)
                self.env_seconds += time.monotonic() - t0
            output = "\n".join(skipped + [self._output()])
        except TerminalError as err:
            # The agent ended its own terminal (killed its shell, pane or tmux server): the episode
            # ends there and the workspace is graded as it stands, as when the agent stops.
            self.stop("terminal_closed")
            return self.end_turn(text, "", tool_calls=calls, tool_result=f"the terminal is gone: {err}",
                                 status="tool_error", done=True)
        if self.env_seconds > float(self.opt("agent_timeout_s", 360)):
            self.stop("agent_timeout", "timeout")
            return self.end_turn(text, "", tool_calls=calls, tool_result=output, status="timeout", done=True)
        if complete and self.pending_completion:
            self.stop("task_complete")
            return self.end_turn(text, "", tool_calls=calls, tool_result=output, done=True)
        self.pending_completion = complete
        obs = output
        if complete:
            confirm = self.opt("confirm_message", 'Are you sure the task is complete? Your work will be graded and '
                               'you cannot change it afterwards. If so, send "task_complete": true again.')
            obs = f"Current terminal state:\n{output}\n\n{confirm}"
        return self.end_turn(text, obs, tool_calls=calls, tool_result=output)

    def finish(self) -> Verdict:
        self.term.close()  # nothing the agent left running may touch the workspace while it is scored
        return super().finish()


@register_style
class TerminusHarness(CodeHarness):
    style = "terminus"
    all_tools = ("keystrokes",)
    tool_capabilities = {"keystrokes": frozenset({"shell", "edit"})}
    session_class = TerminusSession
    #: tmux key names that a whole `keystrokes` string may be (sent as a key, not typed)
    KEY_NAMES = re.compile(r"^(?:[CMS]-.|Enter|Escape|Tab|BSpace|Up|Down|Left|Right|Home|End|PageUp|PageDown|"
                           r"PPage|NPage|Space|DC|IC|F\d{1,2})$")

    def is_key_name(self, keys: str) -> bool:
        return bool(self.KEY_NAMES.match(keys))

    @guarded
    def parse(self, text: str) -> list[ToolCall] | FormatError:
        return parse_response(text)

    def format_error_message(self, err: FormatError) -> str:
        return (f"Previous response had parsing errors:\nERROR: {err.message}\n\n"
                "Please fix these issues and answer with the JSON object described above.")

    # -- scripted plans ----------------------------------------------------------------------

    def _keys(self, intent: Intent, files: dict[str, str], session: Session | None) -> str | None:
        a = intent.args
        if intent.kind == "keys":
            return a["keystrokes"]
        if intent.kind == "read":
            return f"cat {shlex.quote(a['path'])}\n"
        if intent.kind == "run":
            return _script_keys(a["command"])
        if intent.kind in ("write", "replace"):
            path = a["path"]
            if intent.kind == "write":
                content = a["content"]
            else:
                if path not in files:
                    files[path] = ws.read_text(session.env, resolve(path) or path)
                content = files[path].replace(a["old"], a["new"], 1)
            files[path] = content
            q = shlex.quote(path)
            return f"mkdir -p \"$(dirname {q})\" && " + _write_keys(q, content)
        return None

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        return self.render_turn([intent], session)[0]

    def render_turn(self, intents: list[Intent], session: Session | None) -> tuple[str, int]:
        """Batch commands into one response; `finish` is task_complete on two consecutive turns."""
        if intents[0].kind in ("finish", "answer"):
            pending = session is not None and session.view().get("pending_completion")
            return render_response([], True, "The work is done.", "Mark the task complete."), 1 if pending else 0
        commands, files = [], {}
        for intent in intents:
            keys = self._keys(intent, files, session)
            if keys is None:
                break
            commands.append((keys, float(intent.args.get("duration", 30.0))))
        if not commands:
            raise ValueError(f"terminus cannot express a {intents[0].kind!r} intent")
        return render_response(commands, False, "Carry out the next steps.", "Type the commands."), len(commands)


def _script_keys(script: str) -> str:
    script = script if script.endswith("\n") else script + "\n"
    if _SAFE.match(script) and "\n__HRL_EOF__\n" not in "\n" + script:
        return f"bash <<'__HRL_EOF__'\n{script}__HRL_EOF__\n"
    encoded = base64.b64encode(script.encode()).decode()
    return f"echo {encoded} | base64 -d | bash\n"


def _write_keys(quoted_path: str, content: str) -> str:
    if content.endswith("\n") and _SAFE.match(content) and "\n__HRL_EOF__\n" not in "\n" + content:
        return f"cat > {quoted_path} <<'__HRL_EOF__'\n{content}__HRL_EOF__\n"
    encoded = base64.b64encode(content.encode()).decode()
    return f"echo {encoded} | base64 -d > {quoted_path}\n"
