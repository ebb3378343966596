"""A toy harness for trainer tests: a random tiny LM earns reward often enough to give signal.

Task "say-<letter>": two turns; the episode succeeds when the last reply contains the letter.
Replies are never format errors, so the reward depends only on the sampled text.
"""

from __future__ import annotations

from dataclasses import dataclass

from harnessrl.harness.base import Harness, HarnessSpec, Intent, Session, StepResult, ToolCall, Verdict


@dataclass(frozen=True)
class ToyTask:
    letter: str
    kind: str = "toy"
    suite: str = "toy"

    @property
    def task_id(self) -> str:
        return f"toy/say-{self.letter}"

    @property
    def instruction(self) -> str:
        return f"Say something with the letter {self.letter}."


class ToyEnv:
    def __init__(self, task, seed):
        self.task, self.last = task, ""

    def close(self):
        pass


class ToySession(Session):
    def start(self):
        self.messages = [{"role": "system", "content": self.harness.spec.system_prompt},
                         {"role": "user", "content": self.task.instruction}]
        return self.messages

    def step(self, text: str) -> StepResult:
        self.env.last = text
        obs = "" if self.turn + 1 >= self.harness.spec.max_turns else "Again."
        return self.end_turn(text, obs, tool_calls=[ToolCall("say", {"text": text})], done=not obs)

    def finish(self) -> Verdict:
        ok = self.task.letter in self.env.last
        return Verdict(reward=float(ok), success=ok, outcome="solved" if ok else "failed")


class ToyHarness(Harness):
    style = "toy"
    env_kinds = ("toy",)
    all_tools = ("say",)
    session_class = ToySession

    def parse(self, text):
        return [ToolCall("say", {"text": text})]

    def render_intent(self, intent: Intent, session) -> str:
        return str(intent.args.get("text", ""))


def harness(hid: str = "toy-a", prompt: str = "You are a toy.", max_turns: int = 2) -> ToyHarness:
    return ToyHarness(HarnessSpec(id=hid, style="toy", system_prompt=prompt, max_turns=max_turns))


def tasks(letters: str = "aeo") -> list[ToyTask]:
    return [ToyTask(c) for c in letters]


def open_env(task, seed):
    return ToyEnv(task, seed)
