"""Which tasks a training run uses, and the checks made before any rollout.

`load_tasks(suite, ids)` resolves a suite exactly as evaluation does (rollout.suites: a built-in
suite, a registered one such as `lookup` or `miniwob`, or a folder, Terminal-Bench/Harbor ones
included), so anything `harnessrl eval` runs can be trained on.
"""

from __future__ import annotations

from typing import Any, Callable

from harnessrl.config import ConfigError
from harnessrl.rollout.suites import load_suite, pick_tasks, task_id
from harnessrl.tasks.contract import TaskLike

__all__ = ["check_first_prompts_fit", "check_trainable", "load_tasks", "task_id"]


def load_tasks(suite: str, ids: list[str] | None = None) -> list[Any]:
    """The suite's tasks (all it lists), or the named ones in the given order."""
    loaded = load_suite(suite)
    return list(loaded) if ids is None else pick_tasks(loaded, list(ids))


def check_trainable(tasks: list[TaskLike], harnesses: list[Any], seals_dir: str | None = None) -> None:
    """Every harness drives every task's kind, and nothing sealed is trained on (evaluate.seal)."""
    from harnessrl.evaluate.seal import check_not_sealed

    if not tasks:
        raise ConfigError("no tasks to train on")
    for h in harnesses:
        bad = sorted({t.kind for t in tasks if not h.supports(t)})
        if bad:
            raise ConfigError(f"harness {h.id!r} ({h.spec.style}) cannot drive {bad} tasks; it drives {list(h.env_kinds)}")
    check_not_sealed(tasks=tasks, harnesses=harnesses, directory=seals_dir)


def check_first_prompts_fit(tasks: list[TaskLike], harnesses: list[Any], open_env: Callable[[Any, int], Any],
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
