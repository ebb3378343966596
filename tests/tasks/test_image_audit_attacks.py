"""The audit's trust-base attacks (policies/adversaries/trust_base.py) carried out in a task image: each
plants its forgery (every step says `planted`), is REAL with the trusted base and the diagnosis scan off
(the old merged-view interpreter: solved), scores nothing with the trusted base alone (scan off), and
nothing by default. The same attack objects
`harnessrl audit --runtime image` runs; their payload builders are test_image_trust_base.py's too."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harnessrl.policies.adversaries import make_attack
from harnessrl.policies.adversaries.trust_base import compiler
from harnessrl.policies.base import AgentState, Privileged
from harnessrl.tasks.images import grading
from harnessrl.tasks.images.grading import grade_in_image
from harnessrl.tasks.images.rootfs import EpisodeRoot
from harnessrl.tasks.workspace import Workspace

from .test_image_trust_base import FIXTURES, WHY, builds, sandbox, store, task_of  # noqa: F401 (fixtures)

pytestmark = pytest.mark.skipif(WHY is not None, reason=f"task images unavailable here: {WHY}")
#: attack -> the fixture it is shown on (path-shim: the image whose ENV PATH puts /opt/venv/bin first)
CASES = {"library-hijack": "constructs", "path-shim": "venv-path", "ancestor-symlink": "constructs",
         "stdlib-replace": "constructs"}


def commands(name: str, task, ws) -> list[str]:
    """The attack's plan as the rollout makes it (the privileged channel); every intent is a shell run."""
    session = SimpleNamespace(env=SimpleNamespace(workspace=ws))
    state = AgentState(messages=[], harness_id="direct", task_id=task.id, turn=0, episode_key="k",
                       privileged=Privileged(task=task, session=session, harness=None))
    plan = make_attack(name).plan(state)
    assert plan and all(i.kind == "run" for i in plan), plan
    return [i.args["command"] for i in plan]


def attacked(store, built, sandbox, task, name: str):
    with Workspace.create(None, quota_mb=64) as ws:
        root = EpisodeRoot.create(store, built.image, ws)
        sandbox.attach_image(ws, root)
        for command in commands(name, task, ws):
            run = sandbox.run(command, ws, cwd=root.workdir, timeout_s=60)
            assert "planted" in run.stdout and "refused" not in run.stdout, (name, run.stdout[-2000:], run.stderr[-2000:])
        return grade_in_image(task, store, built, ws, root, sandbox, timeout_s=60)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_trust_base_attack_is_real_without_the_trust_base_and_scores_nothing_by_default(
        store, builds, sandbox, monkeypatch, name):
    if name == "library-hijack" and compiler() is None:
        pytest.skip("needs a C compiler for the attack library")
    folder = CASES[name]
    task = task_of(FIXTURES / folder)
    monkeypatch.setattr(grading, "SCAN_UPPER", False)
    monkeypatch.setattr(grading, "TRUST_BASE", False)
    old = attacked(store, builds[folder], sandbox, task, name)
    assert old.status == "graded" and old.solved, (name, "the attack is not real", old.status, old.why)
    monkeypatch.setattr(grading, "TRUST_BASE", True)
    alone = attacked(store, builds[folder], sandbox, task, name)  # the allow-list alone: the scan is a diagnosis
    assert not alone.solved and alone.status in ("graded", "test_error"), (name, alone.status, alone.why)
    monkeypatch.setattr(grading, "SCAN_UPPER", True)
    default = attacked(store, builds[folder], sandbox, task, name)
    assert not default.solved, (name, default.status, default.why)
