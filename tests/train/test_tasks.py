"""Training resolves suites exactly as evaluation does (train/tasks.py over rollout/suites.py):
a suite registered in code and a Terminal-Bench folder can be trained on, not only evaluated."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessrl.config import ConfigError
from harnessrl.harness.base import make_harness
from harnessrl.rollout import suites
from harnessrl.train.tasks import check_trainable, load_tasks, task_id
from tests.tasks.test_loaders_foreign import BASE, tb_task


@pytest.fixture
def registered_suite():
    """`lookup` again under another name, registered as a package would register its own suite."""
    suites.register_suite("lookup-again", "harnessrl.envs.lookup:load_suite")
    yield "lookup-again"
    suites.SUITE_LOADERS.pop("lookup-again", None)


def test_a_registered_suite_can_be_trained_on(registered_suite):
    tasks = load_tasks(registered_suite)
    assert [task_id(t) for t in tasks] == [task_id(t) for t in suites.load_suite("lookup")]
    assert [task_id(t) for t in load_tasks(registered_suite, ["lookup/007", "3"])] == ["lookup/007", "lookup/003"]
    check_trainable(tasks[:2], [make_harness("lookup-plain")])


def test_a_terminal_bench_folder_can_be_trained_on(tmp_path: Path):
    tb_task(tmp_path, "answer", BASE)
    tasks = load_tasks(str(tmp_path))
    assert [task_id(t) for t in tasks] == [task_id(t) for t in suites.load_suite(str(tmp_path))] and len(tasks) == 1
    assert load_tasks(str(tmp_path), [task_id(tasks[0])])[0].instruction.startswith("Write the number 42")


@pytest.mark.parametrize("name", ["lookup", "code-v1"])
def test_training_and_evaluation_see_the_same_tasks(name):
    assert [task_id(t) for t in load_tasks(name)] == [task_id(t) for t in suites.load_suite(name)]


def test_unknown_suites_and_tasks_are_config_errors():
    with pytest.raises(ConfigError, match="unknown suite 'nope'"):
        load_tasks("nope")
    with pytest.raises(ConfigError, match="has no task"):
        load_tasks("code-v1", ["code-v1/nonesuch"])
