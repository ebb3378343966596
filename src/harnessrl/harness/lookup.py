"""lookup: the harness style of the built-in `lookup` suite (envs/lookup.py).

Two tools: look at an object, answer. Everything else is the spec's to choose, which is
what makes several *harnesses* of one task set: the system prompt and task template, the
wording of the question, the command names and syntax, and how a look result is shown.

spec.options:
    look, answer      command names (default "look", "answer")
    syntax            "plain": `look box` / `answer red`;  "call": `look(box)` / `answer(red)`
    observation       template of a look result; $object, every attribute ($color, $size, $material)
                      and the asked ones only: $values ("red and small"), $pairs ("color=red size=small"),
                      $json ('"color": "red", "size": "small"')
    unknown           template when the object does not exist; $object
    question          template of a one-attribute question; $object, $attr
    question2         template of a two-attribute question; $object, $attr, $attr2
Templates of the spec may use $instruction (the phrased question), $objects (comma list),
$look and $answer. The first parsed command of a reply is executed; an answer ends the
episode, so the oracle (the `plan` registered below for scripted policies) needs two turns.
"""

from __future__ import annotations

import re

from harnessrl.harness._reply import guarded
from harnessrl.harness.base import FormatError, Intent, Session, StepResult, TextHarness, ToolCall, Verdict, fill, register_style

DEFAULTS = {
    "look": "look",
    "answer": "answer",
    "syntax": "plain",
    "observation": "The $object is $values.",
    "unknown": "There is no $object here.",
    "question": "What is the $attr of the $object?",
    "question2": "What are the $attr and the $attr2 of the $object?",
}


class LookupSession(Session):
    def opt(self, key: str) -> str:
        return str(self.harness.spec.options.get(key, DEFAULTS[key]))

    def values(self) -> dict[str, str]:
        t = self.task
        q = self.opt("question") if len(t.asked) == 1 else self.opt("question2")
        question = fill(q, object=t.target, attr=t.asked[0], attr2=t.asked[-1])
        return {"instruction": question, "objects": ", ".join(t.objects), "look": self.opt("look"), "answer": self.opt("answer"),
                "skill": self.harness.spec.skill or ""}

    def start(self) -> list[dict[str, str]]:
        v, spec = self.values(), self.harness.spec
        self.messages = []
        if spec.system_prompt:
            self.messages.append({"role": "system", "content": fill(spec.system_prompt, **v)})
        self.messages.append({"role": "user", "content": fill(spec.task_template, **v)})
        return self.messages

    def step(self, text: str) -> StepResult:
        calls = self.harness.parse(text)
        if isinstance(calls, FormatError):
            return self.record_format_error(text, calls)
        call = calls[0]
        if call.name == "answer":
            self.env.answer(call.args["text"])
            return self.end_turn(text, "", tool_calls=[call], tool_result="answered", done=True)
        obj = call.args["object"]
        attrs = self.env.look(obj)
        if attrs is None:
            obs = fill(self.opt("unknown"), object=obj)
            return self.end_turn(text, obs, tool_calls=[call], tool_result=obs, status="tool_error")
        asked = [(a, attrs[a]) for a in self.task.asked]
        obs = fill(self.opt("observation"), object=obj.strip().lower(), **attrs,
                   values=" and ".join(v for _, v in asked), pairs=" ".join(f"{a}={v}" for a, v in asked),
                   json=", ".join(f'"{a}": "{v}"' for a, v in asked))
        return self.end_turn(text, obs, tool_calls=[call], tool_result=obs)

    def finish(self) -> Verdict:
        success, outcome = self.env.verdict()
        return Verdict(reward=float(success), success=success, outcome=outcome,
                       info={"looked": list(self.env.looked), "answer": self.env.answer_text})

    def view(self) -> dict:
        return {"objects": self.task.objects, "looked": list(self.env.looked)}


@register_style
class LookupHarness(TextHarness):
    style = "lookup"
    env_kinds = ("lookup",)
    all_tools = ("look", "answer")
    session_class = LookupSession

    def _names(self) -> tuple[str, str, str]:
        o = self.spec.options
        return str(o.get("look", DEFAULTS["look"])), str(o.get("answer", DEFAULTS["answer"])), str(o.get("syntax", "plain"))

    @guarded
    def parse(self, text: str) -> list[ToolCall] | FormatError:
        look, answer, syntax = self._names()
        line = text.strip().split("\n", 1)[0].strip()
        if syntax == "call":
            m = re.fullmatch(rf"({re.escape(look)}|{re.escape(answer)})\((.+)\)", line)
            hint = f"{look}(<object>) or {answer}(<words>)"
        else:
            m = re.fullmatch(rf"({re.escape(look)}|{re.escape(answer)})\s+(.+)", line)
            hint = f"`{look} <object>` or `{answer} <words>`"
        if not m:
            return FormatError(f"expected one command: {hint}")
        arg = m.group(2).strip()
        if m.group(1) == look:
            return [ToolCall("look", {"object": arg})]
        return [ToolCall("answer", {"text": arg})]

    def render_intent(self, intent: Intent, session: Session | None) -> str:
        look, answer, syntax = self._names()
        if intent.kind == "read":
            name, arg = look, str(intent.args["path"])
        elif intent.kind == "answer":
            name, arg = answer, str(intent.args["text"])
        elif intent.kind == "finish":  # here the final message *is* the answer (noop, explore: "Done.")
            name, arg = answer, str(intent.args.get("message", ""))
        else:
            raise ValueError(f"lookup cannot express a {intent.kind!r} intent")
        return f"{name}({arg})" if syntax == "call" else f"{name} {arg}"


def plan(state) -> list[Intent]:
    """The oracle's remaining intents: look at the target unless already seen, then answer."""
    task, env = state.task, state.session.env
    answer = Intent("answer", text=" ".join(env.expected))
    return [answer] if task.target in env.looked else [Intent("read", path=task.target), answer]
