"""What the two MiniWoB++ harness styles share: the session over a `MiniWoBEnv`, the verdict,
and the oracle's planner.

A style only decides how a page is shown (`render_page`), how a reply becomes a tool call
(`parse`) and how an intent is written (`render_intent`). Tools, the same in both styles:
    click(ref)        click the element with that ref
    type(ref, text)   click/focus the element, then type the text
    press(key)        press a key: "Enter", "ArrowDown", "a", "C-a" (ctrl+a) ...; a key miniwob
                      cannot press (Escape, Home ...) is a format_error naming the allowed keys
    wait(ms)          do nothing for ms (default 500, at most 5000), then see the page again
    stop()            give up; the episode ends unfinished
An unknown ref or key is a `tool_error` observation (the page is shown again); a reply that
does not parse is a `format_error`. The episode ends when MiniWoB says so (the task was
answered, or its time ran out), at `stop`, or at the spec's turn / format-error limits.

Verdict: reward = MiniWoB's time-discounted reward, raw_reward = the undiscounted one,
success = full marks. An episode that ends before MiniWoB gives a verdict scores -1 (as
MiniWoB scores a time-out) with raw_reward None and outcome "unfinished".

spec.options:
    time_limit_s   the task's time limit per episode (default: the page's own, 10 s in most);
                   policies slower than a person (an LM on a CPU) need more
    settle_ms      pause after every action before the page is read (raw miniwob's wait_ms;
                   default 0), so animated pages (accordions, autocomplete menus) are not stale
    show_instruction  false: pages come without "Instruction: ..." (default true); the system
                   prompt or task template may still show it as $instruction
"""

from __future__ import annotations

from typing import Any, ClassVar

from harnessrl.envs.miniwob import (
    ALLOWED_KEYS,
    MAX_WAIT_MS,
    ActionError,
    Click,
    Page,
    PressKey,
    Type,
    Wait,
    WebAction,
    get_oracle,
    success_of,
    task_name,
)
from harnessrl.harness.base import FormatError, Intent, Session, StepResult, TextHarness, ToolCall, Verdict, fill
from harnessrl.tasks.contract import TaskLike

TOOLS = ("click", "type", "press", "wait", "stop")
DEFAULT_WAIT_MS = 500
KEY_ALIASES = {"enter": "<Enter>", "return": "<Enter>", "tab": "<Tab>", "space": "<Space>", "backspace": "<Backspace>",
               "delete": "<Delete>", "escape": "<Escape>", "esc": "<Escape>", "up": "<ArrowUp>", "down": "<ArrowDown>",
               "left": "<ArrowLeft>", "right": "<ArrowRight>"}


def normalize_key(key: str) -> str:
    """"Enter", "<Enter>", "enter", "ArrowDown", "a", "C-a" -> miniwob's key syntax."""
    key = key.strip()
    if len(key) > 2 and key.startswith("<") and key.endswith(">"):
        return key
    if key.lower() in KEY_ALIASES:
        return KEY_ALIASES[key.lower()]
    if len(key) > 1 and key[1:2] != "-":  # a named key: ArrowDown, PageUp, Home ...
        return f"<{key}>"
    return key


def check_key(key: str) -> FormatError | None:
    """None if miniwob can press `key`; else a format error naming what it can press."""
    if normalize_key(key) in ALLOWED_KEYS:
        return None
    named = " ".join(shown_key(k) for k in ALLOWED_KEYS if k.startswith("<") and not k.startswith("<Numpad"))
    return FormatError(f"MiniWoB cannot press {key!r}; keys: {named}, letters, digits, punctuation, C-<letter>")


def check_wait(ms: int) -> FormatError | None:
    return None if 0 < ms <= MAX_WAIT_MS else FormatError(f"wait {ms} ms: wait between 1 and {MAX_WAIT_MS} ms")


def shown_key(key: str) -> str:
    return key[1:-1] if len(key) > 2 and key.startswith("<") and key.endswith(">") else key


def action_of(call: ToolCall) -> WebAction:
    if call.name == "click":
        return Click(int(call.args["ref"]))
    if call.name == "type":
        return Type(int(call.args["ref"]), str(call.args["text"]))
    if call.name == "wait":
        return Wait(int(call.args.get("ms", DEFAULT_WAIT_MS)))
    return PressKey(normalize_key(str(call.args["key"])))


def intent_of(action: WebAction) -> Intent:
    if isinstance(action, Click):
        return Intent("click", ref=action.ref)
    if isinstance(action, Type):
        return Intent("type", ref=action.ref, text=action.text)
    if isinstance(action, Wait):
        return Intent("wait", ms=action.ms)
    return Intent("keys", keystrokes=action.key)


def cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 60] + f"\n[... {len(text) - limit + 60} characters cut: the page is too long ...]"


class MiniWoBSession(Session):
    harness: MiniWoBHarness

    def opt(self, name: str, default: Any = None) -> Any:
        return self.harness.spec.options.get(name, default)

    def start(self) -> list[dict[str, str]]:
        self.task_name = task_name(self.task)
        self.page: Page = self.env.reset(self.seed, time_limit_s=self.opt("time_limit_s"))
        self.env_done, self.reward, self.raw_reward, self.reason = False, 0.0, None, None
        spec = self.harness.spec
        values = {"instruction": self.page.utterance, "utterance": self.page.utterance, "page": self.observation(),
                  "skill": spec.skill or "", "max_turns": spec.max_turns, "task_id": self.task_name}
        self.messages = []
        if spec.system_prompt:
            self.messages.append({"role": "system", "content": fill(spec.system_prompt, **values).strip()})
        self.messages.append({"role": "user", "content": fill(spec.task_template, **values).strip()})
        return self.messages

    def observation(self) -> str:
        return cap(self.harness.render_page(self), self.harness.spec.max_observation_chars)

    def step(self, text: str) -> StepResult:
        calls = self.harness.parse(text)
        if not isinstance(calls, list):
            return self.record_format_error(text, calls)
        call = calls[0]
        if call.name == "stop":
            return self.end_turn(text, "", tool_calls=[call], tool_result="stopped by the agent", done=True)
        try:
            result = self.env.step(action_of(call), settle_ms=float(self.opt("settle_ms", 0) or 0))
        except ActionError as err:
            obs = self.harness.render_error(str(err), self)
            return self.end_turn(text, obs, tool_calls=[call], tool_result=str(err), status="tool_error")
        self.page = result.page
        if result.done:
            self.env_done, self.reward, self.raw_reward, self.reason = True, result.reward, result.raw_reward, result.reason
            note = f"episode over: reward {result.reward:.3f} (raw {result.raw_reward:g})"
            return self.end_turn(text, "", tool_calls=[call], tool_result=note, reward=result.reward, done=True)
        obs = self.observation()
        return self.end_turn(text, obs, tool_calls=[call], tool_result="ok")

    def finish(self) -> Verdict:
        info = {"task": self.task_name, "utterance": self.page.utterance if not self.env_done else "",
                "reason": None if self.reason is None else str(self.reason)}
        if not self.env_done:
            return Verdict(reward=-1.0, success=False, outcome="unfinished", raw_reward=None, info=info)
        success = success_of(self.raw_reward)
        outcome = "solved" if success else ("timed_out" if self.reason == "timed out" else "failed")
        return Verdict(reward=float(self.reward), success=success, outcome=outcome, raw_reward=self.raw_reward, info=info)

    def view(self) -> dict[str, Any]:
        return {"task": self.task_name, "page": self.page, "env_done": self.env_done}


class MiniWoBHarness(TextHarness):
    env_kinds: ClassVar[tuple[str, ...]] = ("miniwob",)
    all_tools: ClassVar[tuple[str, ...]] = TOOLS
    session_class = MiniWoBSession

    def compatibility(self, task: TaskLike) -> str | None:
        kind = getattr(task, "kind", None)
        return None if kind in self.env_kinds else f"{self.style} drives MiniWoB tasks, not {kind!r}"

    def supports(self, task: TaskLike) -> bool:
        return self.compatibility(task) is None

    def render_page(self, session: MiniWoBSession) -> str:
        raise NotImplementedError

    def instruction_line(self, session: MiniWoBSession) -> str:
        """"Instruction: <utterance>" above every page, unless spec.options.show_instruction is
        false (a variant that hides the task, or moves it to the system prompt as $instruction)."""
        if not self.spec.options.get("show_instruction", True):
            return ""
        return f"Instruction: {session.page.utterance}\n\n"

    def render_error(self, message: str, session: MiniWoBSession) -> str:
        return f"Error: {message}.\n\n{session.observation()}"


# ----------------------------------------------------------------------------------------
# The oracle's planner: the scripted oracle of the task, on the page the harness showed.


def plan(state: Any) -> list[Intent]:
    """policies.scripted planner for kind "miniwob": the next intent, or [] (the oracle gives up)."""
    view = state.view or {}
    page = view.get("page")
    if page is None or view.get("env_done"):
        return []
    action = get_oracle(view["task"])(page)
    return [] if action is None else [intent_of(action)]


def contrast(task: TaskLike, session: MiniWoBSession) -> tuple[Intent, Intent] | None:
    """The preference analysis's pair on a task's first page: the oracle's action vs a click on
    another element that has text of its own (a fixed distractor: the first such element in page
    order, the same under every harness since refs do not depend on the harness)."""
    page = session.page
    action = get_oracle(session.task_name)(page)
    if action is None:
        return None
    target = getattr(action, "ref", None)
    others = [e.ref for e in page.elements if e.actionable and e.is_leaf and e.ref != target and e.text.strip()]
    if not others:
        return None
    return intent_of(action), Intent("click", ref=others[0])
