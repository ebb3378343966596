"""Which tasks a training run uses, and the checks made before any rollout.

`load_tasks(suite, ids)` resolves a suite name: `lookup` (envs/lookup.py), `miniwob`
(envs/miniwob), or a task suite the tasks package can load (a built-in name or a folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from harnessrl.config import ConfigError


def task_id(task: Any) -> str:
    """The id a record carries: built-in env tasks (lookup, MiniWoB) name it task_id, suite tasks id."""
    return task.task_id if hasattr(task, "task_id") else task.id


def load_tasks(suite: str, ids: list[str] | None = None) -> list[Any]:
    if suite == "lookup":
        from harnessrl.envs.lookup import lookup_tasks

        try:
            return lookup_tasks(ids)
        except KeyError as err:
            raise ConfigError(str(err.args[0])) from None
    if suite == "miniwob":
        from harnessrl.envs.miniwob.suite import miniwob_tasks

        try:
            return miniwob_tasks(ids)
        except ValueError as err:
            raise ConfigError(str(err)) from None
    from harnessrl.tasks.base import BUILTIN_DIR, builtin_suites, load_suite_folder

    root = Path(suite) if Path(suite).exists() else BUILTIN_DIR / suite
    if not (root / "suite.toml").exists():
        raise ConfigError(f"unknown suite {suite!r}; use lookup, miniwob, a built-in suite "
                          f"({', '.join(builtin_suites()) or 'none'}) or a suite folder")
    tasks = list(load_suite_folder(root))
    if ids is not None:
        by_id = {task_id(t): t for t in tasks}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise ConfigError(f"suite {suite!r} has no tasks {missing[:5]}")
        tasks = [by_id[i] for i in ids]
    return tasks


def check_trainable(tasks: list[Any], harnesses: list[Any], seals_dir: str | None = None) -> None:
    """Every harness drives every task's kind, and nothing sealed is trained on (evaluate.seal)."""
    from harnessrl.evaluate.seal import check_not_sealed

    if not tasks:
        raise ConfigError("no tasks to train on")
    for h in harnesses:
        bad = sorted({t.kind for t in tasks if not h.supports(t)})
        if bad:
            raise ConfigError(f"harness {h.id!r} ({h.spec.style}) cannot drive {bad} tasks; it drives {list(h.env_kinds)}")
    check_not_sealed(tasks=tasks, harnesses=harnesses, directory=seals_dir)


def check_first_prompts_fit(tasks: list[Any], harnesses: list[Any], open_env: Callable[[Any, int], Any],
                            count_tokens: Callable[[list[dict[str, str]]], int], max_new_tokens: int, budget: int,
                            model: str) -> None:
    """Every harness's first prompt (on the task with the longest instruction) plus one turn of
    `max_new_tokens` must fit the `budget`-token context; else a ConfigError with the fix.
    Both engines call this before loading anything heavy."""
    task = max(tasks, key=lambda t: len(getattr(t, "instruction", "") or ""))
    for h in harnesses:
        env = open_env(task, 0)
        try:
            session = h.open(task, env, 0)
            session.ready()  # a program harness: its first call
            n = count_tokens(session.messages)
        finally:
            env.close()
        if n + max_new_tokens > budget:
            raise ConfigError(
                f"harness {h.id!r}: its first prompt takes {n} tokens and a turn may add max_new_tokens="
                f"{max_new_tokens}, more than the {budget}-token context of {model!r}; "
                "shorten the harness prompt, lower policy.max_new_tokens, or use a model with a longer window")
