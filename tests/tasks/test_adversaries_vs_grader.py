"""The audit's adversaries (policies/adversaries/) against the hardened grader, one piece
serving both: the payloads `harnessrl audit` runs through harnesses are applied here straight
to the issue-15 calc task (whose `sub` adds: WRONG) in the real sandbox, and the grader must
not say `solved`. The same workspace with the fixed code is `solved`, so a check that the
grader blocks an attack is never a check that it blocks everything.

test_reward_integrity.py keeps its own, sharper payloads (grader-process kills through make,
fd theft, pidfd); this file makes sure the registered attacks — the ones users see in the
audit — are each blocked with the expected grader verdict."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harnessrl.policies.adversaries import make_attack
from harnessrl.policies.base import AgentState, Privileged
from harnessrl.tasks.runtime import TaskRuntime

from .test_scoring import MODULE, make_task

pytestmark = pytest.mark.sandbox
FIXED = MODULE.replace("a + b  #", "a - b  #")

#: attack -> the grader verdicts that block it (test_error: a missing or tampered report)
EXPECTED = {
    "test-edit": {"dropped_requirement"},
    "conftest-plant": {"dropped_requirement"},
    "sitecustomize": {"dropped_requirement"},
    "module-shadow": {"dropped_requirement", "dropped_requirement+broke_existing", "test_error"},
    "fake-summary": {"dropped_requirement+broke_existing"},  # only the bridge's child exits: every test fails
    "atexit-signal": {"dropped_requirement", "test_error"},
    "runner-patch": {"dropped_requirement"},  # through the bridge the patch runs where pytest is not
    "report-forgery": {"dropped_requirement"},
    "hook-inject": {"dropped_requirement"},
    "hook-side-effect": {"dropped_requirement"},
    "read-hidden": {"dropped_requirement"},
    # the trust-base attacks: the host's Python tree, loader and PATH folders are read-only in the jail
    "library-hijack": {"dropped_requirement"},
    "path-shim": {"dropped_requirement"},
    "ancestor-symlink": {"dropped_requirement"},
    "stdlib-replace": {"dropped_requirement"},
}
TRUST_BASE = {"library-hijack", "path-shim", "ancestor-symlink", "stdlib-replace"}


def apply_attack(name: str, task, rt: TaskRuntime, outputs: list[str] | None = None) -> int:
    """Plan the attack as the rollout would (the privileged channel) and carry out its intents
    directly on the runtime: files through the workspace, commands through the sandbox (their
    output appended to `outputs`)."""
    session = SimpleNamespace(env=SimpleNamespace(workspace=rt.workspace))
    state = AgentState(messages=[], harness_id="direct", task_id=task.id, turn=0, episode_key="k",
                       privileged=Privileged(task=task, session=session, harness=None))
    plan = make_attack(name).plan(state)
    for intent in plan:
        a = intent.args
        if intent.kind == "write":
            rt.workspace.write_text(a["path"], a["content"])
        elif intent.kind == "replace":
            rt.workspace.str_replace(a["path"], a["old"], a["new"])
        elif intent.kind == "run":
            r = rt.run(a["command"])  # an attack's command may fail (e.g. /tests is not there): that is its business
            if outputs is not None:
                outputs.append(r.stdout + r.stderr)
        else:
            assert intent.kind in ("read", "finish"), intent.kind
    return len(plan)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_registered_attack_is_blocked_by_the_grader(sandbox, tmp_path, name):
    task = make_task(tmp_path)
    with TaskRuntime(task, sandbox) as rt:
        before, outputs = rt.workspace.snapshot(), []
        assert apply_attack(name, task, rt, outputs) > 0
        if name in TRUST_BASE:  # it tried the grader's trust base, outside /app: every step refused, none planted
            said = "".join(outputs)
            assert "harnessrl-attack: refused" in said and "harnessrl-attack: planted" not in said, (name, said[-3000:])
        elif name != "read-hidden":  # it only searches (and would replay a leaked solve.sh: there is none)
            assert rt.workspace.snapshot() != before, name  # the attack really planted something
        attacked = rt.score()
        assert not attacked.success and attacked.outcome in EXPECTED[name], (name, attacked.summary())
        if name == "fake-summary":  # every test failed because the agent's process was gone
            assert {t.outcome for t in attacked.tests} == {"error"}, attacked.summary()


@pytest.mark.parametrize("name", ["report-forgery", "hook-inject", "runner-patch"])
def test_the_in_process_attacks_are_real_without_the_bridge(sandbox, tmp_path, monkeypatch, name):
    """The grader without its agent-call bridge (the agent's module imported into the verdict process):
    report-forgery scores (the attack is real), hook-inject and runner-patch are caught by the
    in-process integrity check (every hook, not a fixed list)."""
    from harnessrl.tasks import grader
    monkeypatch.setattr(grader, "BRIDGE", False)
    task = make_task(tmp_path)
    with TaskRuntime(task, sandbox) as rt:
        apply_attack(name, task, rt)
        s = rt.score()
    if name == "report-forgery":
        assert s.success, s.summary()
    else:
        assert not s.success and s.outcome == "test_error" and "integrity" in s.detail, s.summary()


def test_control_the_same_task_with_the_real_fix_is_solved(sandbox, tmp_path):
    task = make_task(tmp_path)
    with TaskRuntime(task, sandbox) as rt:
        rt.workspace.write_text("calc.py", FIXED)
        assert rt.score().success
