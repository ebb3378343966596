"""Reward hooks: functions in TRL's `reward_funcs` shape that add to the verifier's reward of an episode.

    def brevity(prompts, completions, **kwargs) -> list[float]:      # TRL's reward function signature
        return [-0.01 * sum(len(m["content"]) for m in c if m["role"] == "assistant") for c in completions]

    harnessrl eval ... --reward-func mypkg.rewards:brevity --reward-weight 0.5
    run file:    reward_funcs: [mypkg.rewards:brevity]   reward_weights: [0.5]   (TRL's names; verifier_weight: 1.0)
    task.toml:   reward_funcs = ["mypkg.rewards:brevity"]   (or once for a whole suite in suite.toml's [defaults])

For a multi-turn episode, what TRL calls a prompt and a completion is (conversational format):
    prompts[i]      the conversation up to the task: the system prompt and the first user message
    completions[i]  everything after it: the agent's replies and the observations between them, in order
and the keyword arguments are per-episode lists: verifier_reward, success, outcome, task_id, harness_id,
num_turns, format_errors, and final_files: a read-only mapping {path: text} of the agent's workspace as the
episode ended (a host copy taken before grading, dropped once the functions have run; empty for tasks
without a workspace).

The reward is `verifier_weight * verifier_reward + sum_i reward_weights[i] * reward_funcs[i]`; a function that
returns None for an episode adds nothing to it (TRL's "not applicable"). A task's (or its suite's) functions are
added to the run's: a function named by both counts once, with the run's weight, and the two verifier weights
multiply. The hook runs on the host, on the stored conversation and the copied files, after the verifier has
graded: nothing the agent does reaches it, and `success` stays the verifier's. Each part is kept in
episode.metadata["rewards"]. A function is named by `pkg.module:attr` or by an entry point of `harnessrl.rewards`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable

from harnessrl.config import ConfigError

RewardFunc = Callable[..., list[float | None]]

#: episode.metadata key under which the rollout records the reward hook its task (or suite) declares
TASK_KEY = "task_rewards"


@dataclass(frozen=True)
class RewardHook:
    """Plain data (picklable, and what a config holds): the functions by reference, their weights."""

    funcs: tuple[str, ...] = ()
    weights: tuple[float, ...] | None = None  # None: 1.0 each (TRL's default)
    verifier_weight: float = 1.0

    def __post_init__(self) -> None:
        if self.weights is not None and len(self.weights) != len(self.funcs):
            raise ConfigError(f"reward_weights: {len(self.weights)} weights for {len(self.funcs)} reward_funcs; "
                              "give one weight per function")

    @property
    def active(self) -> bool:
        return bool(self.funcs) or self.verifier_weight != 1.0


def load_reward_func(name: str) -> RewardFunc:
    from harnessrl import plugins

    fn = plugins.resolve("harnessrl.rewards", name, "reward function")
    if fn is None:
        raise ConfigError(f"reward function {name!r}: give pkg.module:function, or the name of an installed "
                          f"harnessrl.rewards plugin ({', '.join(plugins.entry_point_names('harnessrl.rewards')) or 'none installed'})")
    if not callable(fn):
        raise ConfigError(f"reward function {name!r} is a {type(fn).__name__}, not a function")
    return fn


def check(hook: RewardHook) -> None:
    """Import every function before any work (a typo fails here, not after the rollouts)."""
    for name in hook.funcs:
        load_reward_func(name)


def declared(task: Any) -> dict[str, Any] | None:
    """The reward hook a task (or its suite's [defaults]) declares in task.toml, or None."""
    reward_hook = getattr(getattr(task, "meta", None), "reward_hook", None)
    return reward_hook() if callable(reward_hook) else None


def check_tasks(tasks: Any) -> None:
    """Import every reward function the tasks declare, once each, before any rollout."""
    names = {name for t in tasks for name in ((declared(t) or {}).get("reward_funcs") or [])}
    for name in sorted(names):
        load_reward_func(name)


def split(messages: list[dict[str, str]]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(prompt, completion) of a conversation: up to the first user message, and the rest."""
    first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"), len(messages) - 1)
    return messages[:first_user + 1], messages[first_user + 1:]


def combine(run: RewardHook, task: dict[str, Any] | None) -> RewardHook:
    """The run's hook with a task's declared one ({reward_funcs, reward_weights, verifier_weight}) added."""
    if not task:
        return run
    t_funcs = list(task.get("reward_funcs") or [])
    t_weights = list(task.get("reward_weights") or [1.0] * len(t_funcs))
    weights = dict(zip(t_funcs, t_weights))
    weights.update(zip(run.funcs, run.weights or (1.0,) * len(run.funcs)))  # the run's weight wins
    funcs = tuple(dict.fromkeys([*run.funcs, *t_funcs]))
    return RewardHook(funcs, tuple(weights[f] for f in funcs), run.verifier_weight * float(task.get("verifier_weight", 1.0)))


def apply(hook: RewardHook, episodes: list[Any]) -> list[Any]:
    """Add the run's and each task's rewards to each episode's (verifier) reward, in place; returns the episodes.
    Episodes are scored in groups that share a hook (each function called once per group, as TRL calls it)."""
    groups: dict[RewardHook, list[Any]] = {}
    for ep in episodes:
        groups.setdefault(combine(hook, ep.metadata.get(TASK_KEY)), []).append(ep)
    for h, eps in groups.items():
        _apply_one(h, eps)
    for ep in episodes:  # the copy served the reward functions; an eval of many episodes need not hold it
        ep.final_files = None
    return episodes


def _apply_one(hook: RewardHook, episodes: list[Any]) -> None:
    if not hook.active or not episodes:
        return
    parts = [split(ep.messages) for ep in episodes]
    kwargs = {"verifier_reward": [float(ep.reward) for ep in episodes], "success": [bool(ep.success) for ep in episodes],
              "outcome": [ep.outcome for ep in episodes], "task_id": [ep.context.task_id for ep in episodes],
              "harness_id": [ep.context.harness_id for ep in episodes], "num_turns": [ep.num_turns for ep in episodes],
              "format_errors": [ep.format_errors for ep in episodes],
              # read-only views: a reward function cannot change what the next one (or the record) sees
              "final_files": [MappingProxyType(dict(ep.final_files or {})) for ep in episodes]}
    weights = hook.weights or (1.0,) * len(hook.funcs)
    totals = [hook.verifier_weight * v for v in kwargs["verifier_reward"]]
    record: list[dict[str, float | None]] = [{"verifier": v} for v in kwargs["verifier_reward"]]
    for name, weight in zip(hook.funcs, weights):
        values = load_reward_func(name)([p for p, _ in parts], [c for _, c in parts], **kwargs)
        if values is None or len(values) != len(episodes):
            raise ConfigError(f"reward function {name!r} returned {'None' if values is None else len(values)} rewards "
                              f"for {len(episodes)} episodes; return one float (or None) per completion")
        for i, value in enumerate(values):
            record[i][name] = None if value is None else float(value)
            if value is not None:
                totals[i] += weight * float(value)
    for ep, total, parts_i in zip(episodes, totals, record):
        ep.metadata["rewards"] = {**parts_i, "weights": dict(zip(hook.funcs, weights)),
                                  "verifier_weight": hook.verifier_weight}
        ep.reward = total
