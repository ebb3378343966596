"""Learned and remote policies cannot read a task's solution or hidden tests; only the oracle can.

Real built-in task (code-v1), real harness sessions, a real tiny LM and a real HTTP endpoint on
127.0.0.1: every input a policy gets (its AgentStates, and for the endpoint the request bodies
that leave the process) is searched for the task's solution text and hidden-test text.
"""

from __future__ import annotations

import dataclasses

import pytest

from harnessrl.harness.base import Harness, Session, make_harness
from harnessrl.policies.base import AgentState
from harnessrl.policies.endpoint import EndpointConfig, EndpointPolicy
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.policies.scripted import Oracle
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.rollout.suites import load_suite
from tests import tiny_lm
from tests.policies.test_endpoint import FakeEndpoint

HARNESSES = ("answer_tag", "aider", "swe_agent", "openhands")


@pytest.fixture(scope="module")
def task():
    suite = load_suite("code-v1")
    return next(t for t in suite.tasks if t.solution is not None and t.solution.steps)


def secrets(task) -> list[str]:
    """Texts only the oracle may see: every solution edit and script, every hidden test file."""
    out = [getattr(s, "new", None) or getattr(s, "content", "") for s in task.solution.steps]
    if task.solution.script:
        out.append(task.solution.script)
    out += [p.read_text() for p in task.tests_dir.rglob("*.py")]
    return [s.strip() for s in out if s.strip()]


def flatten(obj, seen=None) -> list:
    """Every value reachable from a policy input (dataclass fields, dicts, lists), depth first."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    out = [obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            out += flatten(getattr(obj, f.name), seen)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out += flatten(k, seen) + flatten(v, seen)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            out += flatten(v, seen)
    return out


def leaks(states: list[AgentState], task) -> list[str]:
    values = [v for s in states for v in flatten(s)]
    objects = [type(v).__name__ for v in values if v is task or isinstance(v, (Harness, Session))]
    text = "\n".join(str(v) for v in values if isinstance(v, str))
    return objects + [s[:40] for s in secrets(task) if s in text]


class Watching:
    """Mixin: keep every AgentState a policy is asked to act on (a snapshot, before acting)."""

    def act(self, states):
        self.seen.extend(dataclasses.replace(s, messages=list(s.messages), cache={}) for s in states)
        return super().act(states)


class WatchedLM(Watching, LMPolicy):
    seen: list = []


class WatchedEndpoint(Watching, EndpointPolicy):
    seen: list = []


class WatchedOracle(Watching, Oracle):
    seen: list = []


def items(task):
    return [RolloutItem(make_harness(h), task, 0) for h in HARNESSES]


def test_secrets_are_real_text(task):
    assert len(secrets(task)) >= 2 and all(len(s) > 20 for s in secrets(task))


def test_the_oracle_gets_the_privileged_channel_and_solves(task):
    WatchedOracle.seen = []
    episodes = run_group(WatchedOracle(), items(task))
    assert all(e.success for e in episodes), [e.outcome for e in episodes]
    # the check below can fail: the oracle's inputs do reach the task and its solution
    assert leaks(WatchedOracle.seen, task)
    assert all(s.privileged is not None and s.privileged.task is task for s in WatchedOracle.seen)


def test_an_lm_policy_sees_no_solution_and_no_task_object(task, tmp_path):
    model = tiny_lm.build(tmp_path)
    pol = WatchedLM.from_config(LMConfig(model=str(model), max_new_tokens=16, temperature=1.0))
    WatchedLM.seen = []
    run_group(pol, items(task))
    assert WatchedLM.seen and all(s.privileged is None for s in WatchedLM.seen)
    assert leaks(WatchedLM.seen, task) == []


def test_an_endpoint_policy_sends_no_solution(task, monkeypatch):
    monkeypatch.setenv("HRL_TEST_KEY", "sk-test")
    server = FakeEndpoint([(200, "I give up.", None)])
    try:
        pol = WatchedEndpoint(EndpointConfig(model="m", base_url=server.url, api_key_env="HRL_TEST_KEY", backoff_s=0.01))
        WatchedEndpoint.seen = []
        run_group(pol, items(task))
        assert WatchedEndpoint.seen and leaks(WatchedEndpoint.seen, task) == []
        sent = "\n".join(str(r["body"]) for r in server.requests)
        assert server.requests and task.instruction.strip()[:30] in sent.replace("\\n", "\n")  # it did send the task
        assert [s[:40] for s in secrets(task) if s in sent or s.replace("\n", "\\n") in sent] == []
    finally:
        server.close()
