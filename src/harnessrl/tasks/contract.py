"""The task contract: what every layer above may rely on about a task, whatever made it.

A suite task (tasks.base.Task: built-in, folder, Terminal-Bench or Harbor), a lookup task
(envs/lookup.py) and a MiniWoB++ task (envs/miniwob) all satisfy `TaskLike`. Anything beyond
it (a workspace, hidden tests, a reference solution, a page to load) belongs to that kind of
task and is reached through what serves the kind: its env opener (rollout/envs.py), its
harnesses (`Harness.supports`), the oracle's hooks (harness.base.Harness).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class TaskLike(Protocol):
    """task_id: "<suite>/<name>", the id every record carries; suite: the suite's name; kind:
    which env opener and harnesses apply (code, terminal, lookup, miniwob, ...); instruction:
    what the agent is asked to do (MiniWoB++: drawn per seed, so "" here)."""

    @property
    def task_id(self) -> str: ...

    @property
    def suite(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def instruction(self) -> str: ...
