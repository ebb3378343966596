"""MiniWoB++ tasks as harnessrl tasks, and the env opener the rollout loop calls for them.

A `MiniWoBTask` names one MiniWoB page; its instruction (the utterance) is drawn by the page
for each seed, so the task itself carries none. `open_env(task, seed)` lends a browser from
the process-wide pool (pool.shared_pool) already switched to the task; the episode's
`env.close()` hands it back, and the pool closes its browsers at exit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harnessrl.envs.miniwob.env import check_task
from harnessrl.envs.miniwob.oracles import ORACLES
from harnessrl.envs.miniwob.pool import PooledEnv, shared_pool

SUITE = "miniwob"


@dataclass(frozen=True)
class MiniWoBTask:
    name: str  # the MiniWoB task, e.g. "click-checkboxes"
    suite: str = SUITE
    kind: str = "miniwob"
    instruction: str = ""  # drawn per seed by the page; the harness shows the utterance
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_task(self.name)

    @property
    def task_id(self) -> str:
        return f"{self.suite}/{self.name}"

    @property
    def id(self) -> str:
        return self.task_id

    @property
    def has_oracle(self) -> bool:
        return self.name in ORACLES


def miniwob_tasks(names: list[str] | None = None) -> list[MiniWoBTask]:
    """The named tasks (bare names or "miniwob/<name>"); by default every task with an oracle."""
    names = sorted(ORACLES) if names is None else [n.removeprefix(f"{SUITE}/") for n in names]
    return [MiniWoBTask(n) for n in names]


@dataclass(frozen=True)
class MiniWoBSuite:
    """The registered suite `miniwob` (rollout.suites): iterates over the tasks with a scripted
    oracle (the default task list); `find(name)` opens any other MiniWoB++ task (--tasks NAME)."""

    tasks: tuple[MiniWoBTask, ...]
    name: str = SUITE
    version: str = "1"
    description: str = "MiniWoB++ (Farama miniwob 1.1) in headless Chromium: tasks with a scripted oracle"

    def __iter__(self):
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)

    def find(self, name: str) -> MiniWoBTask:
        """Any MiniWoB++ task by name or id, listed here or not (the listed ones are those a
        scripted oracle solves; any policy other than the oracle can run every task)."""
        return MiniWoBTask(name.removeprefix(f"{SUITE}/"))


def load_suite(names: list[str] | None = None) -> MiniWoBSuite:
    return MiniWoBSuite(tuple(miniwob_tasks(names)))


def task_name(task: Any) -> str:
    """A MiniWoBTask, "miniwob/<name>" or "<name>" -> the MiniWoB task name."""
    if isinstance(task, str):
        return check_task(task.removeprefix(f"{SUITE}/"))
    return check_task(getattr(task, "name", None) or str(task.task_id).removeprefix(f"{SUITE}/"))


def open_env(task: Any, seed: int) -> PooledEnv:
    """Rollout opener for kind "miniwob": a pooled browser on the task (reset happens in the harness)."""
    pool = shared_pool()
    return PooledEnv(pool, pool.acquire(task_name(task)))
