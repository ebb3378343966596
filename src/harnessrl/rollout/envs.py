"""Open the environment an agent episode acts in, by task kind.

Openers are named by import path so this module does not import heavy optional stacks
(a browser for MiniWoB) until a task of that kind is run. An opener is
`open(task, seed) -> env`; every env has `close()`.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from harnessrl.config import ConfigError
from harnessrl.tasks.contract import TaskLike

ENV_OPENERS: dict[str, str] = {
    "code": "harnessrl.rollout.envs:open_task_runtime",
    "terminal": "harnessrl.rollout.envs:open_task_runtime",
    "miniwob": "harnessrl.envs.miniwob:open_env",
    "lookup": "harnessrl.envs.lookup:open_env",
}


def opener(kind: str) -> Callable[[Any, int], Any]:
    if kind not in ENV_OPENERS:
        raise ConfigError(f"no environment for task kind {kind!r}; known kinds: {', '.join(ENV_OPENERS)}")
    module, _, name = ENV_OPENERS[kind].partition(":")
    return getattr(importlib.import_module(module), name)


def open_env(task: TaskLike, seed: int) -> Any:
    return opener(task.kind)(task, seed)


def max_open(tasks: list[TaskLike]) -> int | None:
    """How many envs of these tasks one lockstep group may hold open at once (None: no limit).

    MiniWoB++: the shared browser pool's size (HARNESSRL_MINIWOB_BROWSERS, default 4), so a group
    reuses warm browsers wave after wave instead of starting one per episode."""
    if any(getattr(t, "kind", None) == "miniwob" for t in tasks):
        from harnessrl.envs.miniwob.pool import pool_size

        return pool_size()
    return None


_SANDBOXES: dict[int, Any] = {}


def open_task_runtime(task: TaskLike, seed: int) -> Any:
    """A code/terminal task's environment: a fresh sandboxed workspace (`TaskRuntime`).

    One `Sandbox` per process is shared by its episodes (it is thread-safe and stateless per call).
    """
    import os

    from harnessrl.tasks.runtime import TaskRuntime
    from harnessrl.tasks.sandbox import Sandbox

    sandbox = _SANDBOXES.get(os.getpid())
    if sandbox is None:
        sandbox = _SANDBOXES[os.getpid()] = Sandbox()
    if getattr(task, "runtime", "jail") == "image":  # the task's own image (tasks/images/runtime.py)
        from harnessrl.tasks.images.runtime import ImageTaskRuntime

        return ImageTaskRuntime(task, sandbox)
    return TaskRuntime(task, sandbox)
