"""Open the environment an agent episode acts in, by task kind.

Openers are named by import path so this module does not import heavy optional stacks
(a browser for MiniWoB) until a task of that kind is run. An opener is
`open(task, seed) -> env`; every env has `close()`.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from harnessrl.config import ConfigError

ENV_OPENERS: dict[str, str] = {
    "code": "harnessrl.tasks.workspace:open_workspace",
    "terminal": "harnessrl.tasks.workspace:open_workspace",
    "miniwob": "harnessrl.envs.miniwob:open_env",
}


def opener(kind: str) -> Callable[[Any, int], Any]:
    if kind not in ENV_OPENERS:
        raise ConfigError(f"no environment for task kind {kind!r}; known kinds: {', '.join(ENV_OPENERS)}")
    module, _, name = ENV_OPENERS[kind].partition(":")
    return getattr(importlib.import_module(module), name)


def open_env(task: Any, seed: int) -> Any:
    return opener(task.kind)(task, seed)
