"""One contract for every harness, ours and the real programs: the same checks on each.

For every built-in harness spec and every program harness, one code task through the ordinary
rollout loop (`run_group`, the path evaluation, training, the audit and both engines take):
the oracle solves it, noop does not, every episode is a valid record (turn arrays aligned,
statuses from the schema), the two-phase step (`send`, then `receive`) is how the loop drives
it, and nothing of the episode outlives it (no process of the workspace's uid is left).
"""

from __future__ import annotations

import os

import pytest

from harnessrl.episode import STATUSES, TURN_STATUSES
from harnessrl.harness.base import builtin_specs, make_harness, program_specs
from harnessrl.policies.registry import make_policy
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.rollout.suites import load_suite
from harnessrl.tasks.sandbox import bwrap_path
from tests.harness.test_program import harness as script_program
from tests.tasks.conftest import uid_processes

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0,
                                                      reason="needs bubblewrap and root (programs run in a netns)")]

CODE_HARNESSES = [h for h in builtin_specs() if h not in ("answer_tag",) and not h.startswith(("lookup", "miniwob"))]
REAL_PROGRAMS = list(program_specs())


def _harness(name: str):
    if name == "script-program":
        return script_program()
    if name in REAL_PROGRAMS:
        from harnessrl.agents.install import install, is_installed

        if not is_installed(make_harness(name).program):
            install(make_harness(name).program)  # about a minute from the registry, once
    return make_harness(name)


@pytest.mark.parametrize("name", CODE_HARNESSES + ["script-program"]
                         + [pytest.param(p, marks=pytest.mark.slow) for p in REAL_PROGRAMS])
def test_every_harness_meets_the_rollout_contract(name, monkeypatch):
    h = _harness(name)
    task = load_suite("code-v1")["feat-stack-peek"]
    phases = []
    session_class = h.session_class
    send, receive = session_class.send, session_class.receive
    monkeypatch.setattr(session_class, "send", lambda self, *a: (phases.append("send"), send(self, *a))[1])
    monkeypatch.setattr(session_class, "receive", lambda self: (phases.append("receive"), receive(self))[1])
    uids = []
    monkeypatch.setattr(session_class, "finish", lambda self, f=session_class.finish: (uids.append(self.env.workspace.uid), f(self))[1])
    for policy, solved in (("oracle", True), ("noop", False)):
        phases.clear()
        ep = run_group(make_policy(policy), [RolloutItem(h, task, 0)])[0]
        assert ep.success is solved, (name, policy, ep.outcome, ep.status, ep.metadata.get("crash", "")[-500:])
        assert ep.status in STATUSES and ep.context.harness_id == h.id and ep.turns
        for t in ep.turns:
            assert t.status in TURN_STATUSES and len(t.token_ids) == len(t.logprobs) == len(t.loss_mask)
        assert phases == ["send", "receive"] * len(ep.turns)
        assert uid_processes(uids[-1]) == []


@pytest.mark.slow
def test_aider_cli_oracle_names_files_from_aiders_root():
    """Without git, Aider's root is the common folder of its chat files (here plugins/): the oracle's
    blocks must name files relative to it, or a new file lands in plugins/plugins/."""
    task = load_suite("code-v1")["feat-plugin-registry"]
    ep = run_group(make_policy("oracle"), [RolloutItem(_harness("aider-cli"), task, 0)])[0]
    assert ep.success, (ep.outcome, ep.metadata["program_output"][-1500:])
    assert "\nshout.py\n```\n<<<<<<< SEARCH" in "\n" + ep.turns[0].action
