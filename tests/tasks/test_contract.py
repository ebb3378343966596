"""The task contract (tasks/contract.py): every kind of task the layers above receive has the
fields they rely on, under one name each."""

from __future__ import annotations

import pytest

from harnessrl.envs.lookup import lookup_tasks
from harnessrl.envs.miniwob.suite import MiniWoBTask
from harnessrl.harness.base import make_harness
from harnessrl.rollout.suites import load_suite
from harnessrl.tasks.contract import TaskLike


@pytest.mark.parametrize("task", [load_suite("code-v1").tasks[0], lookup_tasks()[0], MiniWoBTask("click-test")],
                         ids=["suite", "lookup", "miniwob"])
def test_every_kind_of_task_keeps_the_contract(task):
    assert isinstance(task, TaskLike)
    assert task.task_id.startswith(task.suite + "/") and isinstance(task.kind, str) and isinstance(task.instruction, str)
    assert getattr(task, "id", task.task_id) == task.task_id


@pytest.mark.parametrize("harness", ["aider", "openhands", "swe_agent", "lookup-plain", "miniwob-html"])
def test_the_hooks_scripted_policies_use_are_on_every_harness(harness):
    h = make_harness(harness)
    caps = h.capabilities
    assert caps is None or caps <= {"shell", "edit"}
    assert (caps is None) == (harness in ("lookup-plain", "miniwob-html"))
    assert callable(h.render_turn)
