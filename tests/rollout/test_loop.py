"""The episode loop with a small harness written here: a guessing game over a counter env."""

import re
from dataclasses import dataclass

import numpy as np

from harnessrl.harness.base import FormatError, Harness, HarnessSpec, Intent, Session, ToolCall, Verdict
from harnessrl.policies.base import Action, Policy
from harnessrl.rollout.loop import RolloutItem, run_group


@dataclass
class Task:
    task_id: str
    target: int
    kind: str = "toy"
    suite: str = "toy-v1"
    instruction: str = "guess the number"


class Env:
    closed = 0

    def __init__(self, task, seed):
        self.task = task
        if task.target < 0:
            raise RuntimeError("env cannot start")

    def close(self):
        Env.closed += 1


class GuessSession(Session):
    def start(self):
        self.messages = [{"role": "system", "content": "Reply GUESS <n>."}, {"role": "user", "content": self.task.instruction}]
        self.best = None
        return self.messages

    def step(self, text):
        calls = self.harness.parse(text)
        if isinstance(calls, FormatError):
            return self.record_format_error(text, calls)
        n = calls[0].args["n"]
        if self.task.task_id == "bug":
            raise RuntimeError("harness bug")
        self.best = n
        right = n == self.task.target
        return self.end_turn(text, "correct" if right else ("higher" if n < self.task.target else "lower"),
                             tool_calls=calls, tool_result=str(n), done=right)

    def finish(self):
        ok = self.best == self.task.target
        return Verdict(reward=float(ok), success=ok, outcome="solved" if ok else "failed")


class GuessHarness(Harness):
    style = "guess"
    env_kinds = ("toy",)
    session_class = GuessSession

    def parse(self, text):
        m = re.fullmatch(r"GUESS (\d+)", text.strip())
        return [ToolCall("guess", {"n": int(m.group(1))})] if m else FormatError("expected GUESS <n>")

    def render_intent(self, intent, session):
        return f"GUESS {intent.args['n']}"


class Bisect(Policy):
    """Binary search through the harness; emits garbage on its first turn when asked to."""

    policy_id = "bisect"
    privileged = True  # renders through the harness, like the scripted oracle

    def __init__(self, garbage_first=False):
        self.garbage_first = garbage_first

    def act(self, states):
        out = []
        for s in states:
            lo, hi = s.cache.setdefault("range", [0, 64])
            last = s.messages[-1]["content"]
            if last == "higher":
                s.cache["range"][0] = s.cache["guess"] + 1
            elif last == "lower":
                s.cache["range"][1] = s.cache["guess"] - 1
            lo, hi = s.cache["range"]
            if self.garbage_first and s.turn == 0 and "garbled" not in s.cache:
                s.cache["garbled"] = True
                out.append(Action("i think maybe 12?"))
                continue
            s.cache["guess"] = (lo + hi) // 2
            text = s.privileged.harness.render_intent(Intent("guess", n=s.cache["guess"]), s.privileged.session)
            out.append(Action(text, token_ids=np.arange(3), logprobs=-np.ones(3), loss_mask=np.array([0, 1, 1])))
        return out


def open_env(task, seed):
    return Env(task, seed)


def harness(max_turns=10):
    return GuessHarness(HarnessSpec(id="guess-a", style="guess", max_turns=max_turns))


def test_group_runs_to_stop_rule_with_tokens_and_status():
    Env.closed = 0
    tasks = [Task(f"t{k}", k) for k in (5, 40, 63)]
    eps = run_group(Bisect(), [RolloutItem(harness(), t, s) for s, t in enumerate(tasks)], run_id="r", open_env=open_env)
    assert [e.context.task_id for e in eps] == ["t5", "t40", "t63"]
    assert all(e.success and e.status == "ok" and e.outcome == "solved" for e in eps)
    assert all(e.turns[-1].tool_result == str(e.context.task_id[1:]) for e in eps)
    assert eps[0].turns[0].observation == "guess the number" and eps[0].turns[1].observation in ("higher", "lower")
    assert eps[0].tokens_out == 2 * eps[0].num_turns and eps[0].run_id == "r" and eps[0].policy_id == "bisect"
    assert Env.closed == 3


def test_format_errors_are_counted_observations():
    eps = run_group(Bisect(garbage_first=True), [RolloutItem(harness(), Task("t", 7), 0)], open_env=open_env)
    ep = eps[0]
    assert ep.success and ep.format_errors == 1 and ep.turns[0].status == "format_error"
    assert "could not be parsed" in ep.turns[1].observation


def test_turn_limit_and_crashes_do_not_lose_episodes():
    Env.closed = 0
    items = [
        RolloutItem(harness(max_turns=2), Task("hard", 63), 0),  # needs more than 2 turns
        RolloutItem(harness(), Task("broken-env", -1), 1),  # env fails to open
        RolloutItem(harness(), Task("bug", 9), 2),  # the harness raises on its first step
    ]
    eps = run_group(Bisect(), items, open_env=open_env)
    assert eps[0].status == "turn_limit" and not eps[0].success and eps[0].num_turns == 2
    assert eps[1].status == "crash" and "env cannot start" in eps[1].metadata["crash"]
    assert eps[2].status == "crash" and "harness bug" in eps[2].metadata["crash"] and eps[2].num_turns == 1
    assert Env.closed == 2  # both opened envs are closed; the one that never opened is not
